//! batch/v1 Job and CronJob: defaults (pkg/apis/batch/v1/defaults.go), strategies
//! (pkg/registry/batch/job, cronjob: the generated selector and labels, status reset,
//! generation) and validation (pkg/apis/batch/validation).

use kapi_apimachinery::labels::from_label_selector;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{is_dns1123_label, validate_label_selector};
use kapi_server::resource::Name;
use kapi_server::resource::{GarbageCollectionPolicy, Strategy};
use serde_json::{Map, Value, json};

use super::cron::parse_standard;
use super::defaults::{default_pod_template, set_default};
use super::podspec::{nonnegative, validate_pod_template_spec};
use crate::strategy::{carry_status, reset_for_create};
use crate::util::{child_mut, fields_mut, int_of, str_of, validate_immutable};
use kapi_server::object::bump_generation_on_spec_change;

/// The labels a Job's generated selector and pods carry.
const CONTROLLER_UID_LABEL: &str = "batch.kubernetes.io/controller-uid";
const LEGACY_CONTROLLER_UID_LABEL: &str = "controller-uid";
const JOB_NAME_LABEL: &str = "batch.kubernetes.io/job-name";
const LEGACY_JOB_NAME_LABEL: &str = "job-name";

/// The largest CronJob name: the controller appends an 11-character suffix to job names.
const MAX_CRON_JOB_NAME: usize = 52;

/// Whether `zone` names a time zone as Go's `time.LoadLocation` finds one in kube-apiserver,
/// which embeds Go's time/tzdata: the system's database first, then the bundled copy, so
/// validation does not depend on the machine having /usr/share/zoneinfo. Names match
/// exactly (Go's lookups are case-sensitive where jiff's are not).
pub(crate) fn known_time_zone(zone: &str) -> bool {
    if zone == "UTC" || zone.is_empty() {
        return true;
    }
    if zone.split('/').any(|part| part.is_empty() || part == "..") || zone.starts_with('/') {
        return false;
    }
    time_zone_databases().iter().any(|db| has_zone(db, zone))
}

/// Whether `db` holds `zone` under exactly that name.
fn has_zone(db: &jiff::tz::TimeZoneDatabase, zone: &str) -> bool {
    db.get(zone).is_ok_and(|tz| tz.iana_name() == Some(zone))
}

/// The system's time-zone database and the bundled one, opened once.
fn time_zone_databases() -> &'static [jiff::tz::TimeZoneDatabase; 2] {
    static DATABASES: std::sync::OnceLock<[jiff::tz::TimeZoneDatabase; 2]> =
        std::sync::OnceLock::new();
    DATABASES.get_or_init(|| {
        [
            jiff::tz::TimeZoneDatabase::from_dir("/usr/share/zoneinfo")
                .unwrap_or_else(|_| jiff::tz::TimeZoneDatabase::none()),
            jiff::tz::TimeZoneDatabase::bundled(),
        ]
    })
}

/// Whether `zone` is in the bundled database alone (tests: a machine without the system's).
#[cfg(test)]
pub(crate) fn bundled_time_zone(zone: &str) -> bool {
    has_zone(&time_zone_databases()[1], zone)
}

/// SetDefaults_Job and the pod template's defaults.
fn default_job(job: &mut Value) {
    let template_labels = job["spec"]["template"]["metadata"]["labels"].clone();
    let spec = child_mut(job, "spec");
    let unset = |spec: &Map<String, Value>, key: &str| spec.get(key).is_none_or(Value::is_null);
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
    }
    set_default(spec, "parallelism", json!(1));
    let backoff = if unset(spec, "backoffLimitPerIndex") {
        6
    } else {
        2_147_483_647
    };
    set_default(spec, "backoffLimit", json!(backoff));
    set_default(spec, "completionMode", json!("NonIndexed"));
    set_default(spec, "suspend", json!(false));
    let replacement = if unset(spec, "podFailurePolicy") {
        "TerminatingOrFailed"
    } else {
        "Failed"
    };
    set_default(spec, "podReplacementPolicy", json!(replacement));
    set_default(spec, "manualSelector", json!(false));
    let template = spec.entry("template").or_insert_with(|| json!({}));
    default_pod_template(template);
    if template_labels.as_object().is_some_and(|l| !l.is_empty()) {
        let meta = child_mut(job, "metadata");
        if meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
        {
            meta.insert("labels".into(), template_labels);
        }
    }
}

/// The Job strategy's generateSelector: job-name and controller-uid labels on the template
/// (unless set), and a selector on the controller-uid.
fn generate_selector(job: &mut Value) {
    let name = str_of(&job["metadata"], "name").to_string();
    let uid = str_of(&job["metadata"], "uid").to_string();
    let spec = child_mut(job, "spec");
    let template = fields_mut(spec.entry("template").or_insert_with(|| json!({})));
    let meta = fields_mut(template.entry("metadata").or_insert_with(|| json!({})));
    let labels = fields_mut(meta.entry("labels").or_insert_with(|| json!({})));
    for key in [LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL] {
        labels.entry(key).or_insert_with(|| json!(name));
    }
    for key in [LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL] {
        labels.entry(key).or_insert_with(|| json!(uid));
    }
    let selector = fields_mut(spec.entry("selector").or_insert_with(|| json!({})));
    let match_labels = fields_mut(selector.entry("matchLabels").or_insert_with(|| json!({})));
    match_labels
        .entry(CONTROLLER_UID_LABEL)
        .or_insert_with(|| json!(uid));
}

/// Whether the Job picks its own selector.
fn manual_selector(spec: &Value) -> bool {
    spec["manualSelector"].as_bool() == Some(true)
}

/// ValidateHasLabel: the template must carry `key` = `expected`.
fn has_label(template_meta: &Value, path: &Path, key: &str, expected: &str) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let labels = &template_meta["labels"];
    let label_path = path.child("labels").key(key);
    match labels.get(key).and_then(Value::as_str) {
        None => errs.push(FieldError::required(
            &label_path,
            format!("must be '{expected}'"),
        )),
        Some(actual) if actual != expected => errs.push(FieldError::invalid(
            &label_path,
            labels.clone(),
            format!("must be '{expected}'"),
        )),
        Some(_) => {}
    }
    errs
}

/// validateGeneratedSelector: a generated selector's labels must name this Job's uid
/// (`require_prefixed`: the `batch.kubernetes.io/` label too).
fn validate_generated_selector(job: &Value, require_prefixed: bool) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let spec = &job["spec"];
    if manual_selector(spec) {
        return errs;
    }
    let uid = str_of(&job["metadata"], "uid");
    if uid.is_empty() {
        errs.push(FieldError::required(
            &Path::root("metadata").child("uid"),
            "",
        ));
    }
    let template_meta = &spec["template"]["metadata"];
    let meta_path = Path::root("spec").child("template").child("metadata");
    errs.extend(has_label(
        template_meta,
        &meta_path,
        LEGACY_CONTROLLER_UID_LABEL,
        uid,
    ));
    if require_prefixed {
        errs.extend(has_label(
            template_meta,
            &meta_path,
            CONTROLLER_UID_LABEL,
            uid,
        ));
    }
    let selector = &spec["selector"];
    if selector.is_object() && selector["matchLabels"][CONTROLLER_UID_LABEL].as_str() != Some(uid) {
        errs.push(FieldError::invalid(
            &Path::root("spec").child("selector"),
            selector.clone(),
            "`selector` not auto-generated",
        ));
    }
    errs
}

/// validateJobSpec: the checks Jobs and CronJobs' job templates share.
fn validate_job_spec(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        if let Some(value) = spec.get(key).and_then(Value::as_i64) {
            errs.extend(nonnegative(value, &path.child(key)));
        }
    }
    let mode = spec.get("completionMode").and_then(Value::as_str);
    if spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null())
        && mode != Some("Indexed")
    {
        errs.push(FieldError::invalid(
            &path.child("backoffLimitPerIndex"),
            spec["backoffLimitPerIndex"].clone(),
            "requires indexed completion mode",
        ));
    }
    if let Some(mode) = mode {
        if !["NonIndexed", "Indexed"].contains(&mode) {
            errs.push(FieldError::not_supported(
                &path.child("completionMode"),
                mode,
                ["NonIndexed", "Indexed"],
            ));
        }
        if mode == "Indexed" && spec["completions"].is_null() {
            errs.push(FieldError::required(
                &path.child("completions"),
                "when completion mode is Indexed",
            ));
        }
    }
    errs.extend(validate_replacement_policy(
        spec,
        &path.child("podReplacementPolicy"),
    ));
    let template_path = path.child("template");
    errs.extend(validate_pod_template_spec(
        &spec["template"],
        &template_path,
    ));
    errs.extend(validate_job_restart_policy(spec, &template_path));
    errs
}

/// validatePodReplacementPolicy.
fn validate_replacement_policy(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(policy) = spec.get("podReplacementPolicy").and_then(Value::as_str) else {
        return errs;
    };
    if spec["podFailurePolicy"].is_object() {
        if policy != "Failed" {
            errs.push(FieldError::not_supported(path, policy, ["Failed"]));
        }
    } else if !["Failed", "TerminatingOrFailed"].contains(&policy) {
        errs.push(FieldError::not_supported(
            path,
            policy,
            ["Failed", "TerminatingOrFailed"],
        ));
    }
    errs
}

/// A Job's pods restart OnFailure or Never (only Never with a podFailurePolicy).
fn validate_job_restart_policy(spec: &Value, template_path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = template_path.child("spec").child("restartPolicy");
    match str_of(&spec["template"]["spec"], "restartPolicy") {
        "Always" | "" => errs.push(FieldError::required(
            &path,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" if spec["podFailurePolicy"].is_object() => errs.push(FieldError::invalid(
            &path,
            "OnFailure",
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        other => errs.push(FieldError::not_supported(
            &path,
            other,
            ["OnFailure", "Never"],
        )),
    }
    errs
}

/// ValidateJobSpec: validateJobSpec plus a required selector matching the template.
fn validate_job_spec_with_selector(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = validate_job_spec(spec, path);
    let selector = &spec["selector"];
    if selector.is_null() {
        errs.push(FieldError::required(&path.child("selector"), ""));
    } else {
        errs.extend(validate_label_selector(selector, &path.child("selector")));
    }
    if let Ok(parsed) = from_label_selector(selector) {
        if parsed.is_empty() {
            errs.push(FieldError::required(&path.child("selector"), ""));
        }
        let labels = &spec["template"]["metadata"]["labels"];
        if !parsed.matches(labels) {
            errs.push(FieldError::invalid(
                &path.child("template").child("metadata").child("labels"),
                labels.clone(),
                "`selector` does not match template `labels`",
            ));
        }
    }
    errs
}

/// Jobs.
pub(crate) struct JobStrategy;

impl JobStrategy {
    /// ValidateJob; `require_prefixed` as validationOptionsForJob decides it.
    fn validate_job(job: &Value, require_prefixed: bool) -> FieldErrors {
        let mut errs = validate_generated_selector(job, require_prefixed);
        let spec = &job["spec"];
        errs.extend(validate_job_spec_with_selector(spec, &Path::root("spec")));
        let completions = int_of(spec, "completions");
        if str_of(spec, "completionMode") == "Indexed" && completions > 0 {
            let name = str_of(&job["metadata"], "name");
            let hostname = format!("{name}-{}", completions - 1);
            if !is_dns1123_label(&hostname).is_empty() {
                errs.push(FieldError::invalid(
                    &Path::root("metadata").child("name"),
                    name,
                    format!("will not able to create pod with invalid DNS label: {hostname}"),
                ));
            }
        }
        errs
    }
}

impl Strategy for JobStrategy {
    /// batch/v1 Jobs and v1 ReplicationControllers orphan their dependents unless told
    /// otherwise, as upstream keeps them for backward compatibility.
    fn garbage_collection_policy(&self) -> GarbageCollectionPolicy {
        GarbageCollectionPolicy::OrphanDependents
    }

    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        default_job(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        default_job(object);
        if !manual_selector(&object["spec"]) {
            generate_selector(object);
        }
        reset_for_create(object, json!({}));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        default_job(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        Self::validate_job(object, true)
    }

    /// ValidateJobSpecUpdate: the selector, template (unless the job is suspended and
    /// never started, for its scheduling directives) and several modes are immutable.
    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let old_labels = &old["spec"]["template"]["metadata"]["labels"];
        let had_prefixed = [JOB_NAME_LABEL, CONTROLLER_UID_LABEL]
            .iter()
            .all(|key| old_labels.get(*key).is_some());
        let mut errs = Self::validate_job(new, had_prefixed);
        let (spec, old_spec) = (&new["spec"], &old["spec"]);
        let path = Path::root("spec");
        errs.extend(validate_completions_update(spec, old_spec, &path));
        errs.extend(validate_immutable(
            &spec["selector"],
            &old_spec["selector"],
            &path.child("selector"),
        ));
        errs.extend(validate_template_update(new, old, &path));
        for key in [
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
            "managedBy",
            "successPolicy",
            "podReplacementPolicy",
        ] {
            errs.extend(validate_immutable(
                &spec[key],
                &old_spec[key],
                &path.child(key),
            ));
        }
        errs
    }

    fn selectable_fields(&self, object: &Value) -> Vec<(kapi_server::resource::Name, String)> {
        vec![(
            "status.successful".into(),
            int_of(&object["status"], "succeeded").to_string(),
        )]
    }

    fn supports_field(&self, field: &str) -> bool {
        field == "status.successful"
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[Name::Borrowed("status")])
    }
}

/// Completions may change only for Indexed jobs, together with parallelism.
fn validate_completions_update(spec: &Value, old: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let completions_path = path.child("completions");
    if str_of(spec, "completionMode") != "Indexed" {
        return validate_immutable(&spec["completions"], &old["completions"], &completions_path);
    }
    if spec["completions"] == old["completions"] || spec["completions"].is_null() {
        return errs;
    }
    if spec["completions"] != spec["parallelism"] {
        errs.push(FieldError::invalid(
            &completions_path,
            spec["completions"].clone(),
            "can only be modified in tandem with spec.parallelism",
        ));
    }
    errs
}

/// The template is immutable, except the scheduling directives of a suspended Job that has
/// not started.
fn validate_template_update(new: &Value, old: &Value, path: &Path) -> FieldErrors {
    let template = &new["spec"]["template"];
    let mut old_template = old["spec"]["template"].clone();
    let suspended = old["spec"]["suspend"].as_bool() == Some(true);
    if suspended && old["status"]["startTime"].is_null() {
        for (section, key) in [
            ("spec", "nodeSelector"),
            ("spec", "tolerations"),
            ("spec", "schedulingGates"),
            ("spec", "affinity"),
            ("metadata", "annotations"),
            ("metadata", "labels"),
        ] {
            let target = child_mut(&mut old_template, section);
            match template[section].get(key) {
                Some(value) => target.insert(key.to_string(), value.clone()),
                None => target.remove(key),
            };
        }
    }
    validate_immutable(template, &old_template, &path.child("template"))
}

/// CronJobs.
pub(crate) struct CronJobStrategy;

impl CronJobStrategy {
    /// SetDefaults_CronJob and the job template's pod template defaults.
    fn default(object: &mut Value) {
        let spec = child_mut(object, "spec");
        set_default(spec, "concurrencyPolicy", json!("Allow"));
        set_default(spec, "suspend", json!(false));
        set_default(spec, "successfulJobsHistoryLimit", json!(3));
        set_default(spec, "failedJobsHistoryLimit", json!(1));
        let job_template = fields_mut(spec.entry("jobTemplate").or_insert_with(|| json!({})));
        let job_spec = fields_mut(job_template.entry("spec").or_insert_with(|| json!({})));
        default_pod_template(job_spec.entry("template").or_insert_with(|| json!({})));
    }

    fn validate_spec(spec: &Value) -> FieldErrors {
        let path = Path::root("spec");
        let mut errs = FieldErrors::new();
        let schedule = str_of(spec, "schedule");
        let schedule_path = path.child("schedule");
        if schedule.is_empty() {
            errs.push(FieldError::required(&schedule_path, ""));
        } else {
            if let Err(message) = parse_standard(schedule) {
                errs.push(FieldError::invalid(&schedule_path, schedule, message));
            }
            if schedule.contains("TZ") {
                errs.push(FieldError::invalid(
                    &schedule_path,
                    schedule,
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                ));
            }
        }
        if let Some(deadline) = spec.get("startingDeadlineSeconds").and_then(Value::as_i64) {
            errs.extend(nonnegative(
                deadline,
                &path.child("startingDeadlineSeconds"),
            ));
        }
        let policy = str_of(spec, "concurrencyPolicy");
        let policy_path = path.child("concurrencyPolicy");
        if policy.is_empty() {
            errs.push(FieldError::required(&policy_path, ""));
        } else if !["Allow", "Forbid", "Replace"].contains(&policy) {
            errs.push(FieldError::not_supported(
                &policy_path,
                policy,
                ["Allow", "Forbid", "Replace"],
            ));
        }
        errs.extend(validate_job_template(
            &spec["jobTemplate"],
            &path.child("jobTemplate"),
        ));
        for key in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
            if let Some(limit) = spec.get(key).and_then(Value::as_i64) {
                errs.extend(nonnegative(limit, &path.child(key)));
            }
        }
        errs.extend(validate_time_zone(spec, &path.child("timeZone")));
        errs
    }
}

/// ValidateJobTemplateSpec: a job spec whose selector is generated later.
fn validate_job_template(template: &Value, path: &Path) -> FieldErrors {
    let spec = &template["spec"];
    let spec_path = path.child("spec");
    let mut errs = validate_job_spec(spec, &spec_path);
    if spec["selector"].is_object() {
        errs.push(FieldError::invalid(
            &spec_path.child("selector"),
            spec["selector"].clone(),
            "`selector` will be auto-generated",
        ));
    }
    if manual_selector(spec) {
        errs.push(FieldError::not_supported(
            &spec_path.child("manualSelector"),
            true,
            ["nil", "false"],
        ));
    }
    errs
}

/// validateTimeZone: unset, or an explicit zone of the time zone database.
fn validate_time_zone(spec: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(zone) = spec.get("timeZone").and_then(Value::as_str) else {
        return errs;
    };
    if zone.is_empty() {
        errs.push(FieldError::invalid(
            path,
            zone,
            "timeZone must be nil or non-empty string",
        ));
        return errs;
    }
    if zone.eq_ignore_ascii_case("local") {
        errs.push(FieldError::invalid(
            path,
            zone,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    } else if !known_time_zone(zone) {
        errs.push(FieldError::invalid(
            path,
            zone,
            format!("unknown time zone {zone}"),
        ));
    }
    errs
}

impl Strategy for CronJobStrategy {
    /// Upstream's defaulting, run by the handlers before managedFields are recorded (so the
    /// writer owns the defaulted fields); the preparation below runs it again for writers
    /// that reach the registry directly (bootstrap controllers): defaulting is idempotent.
    fn default(&self, object: &mut Value) {
        Self::default(object);
    }

    fn prepare_for_create(&self, object: &mut Value) {
        Self::default(object);
        reset_for_create(object, json!({}));
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        Self::default(new);
        carry_status(new, old);
        bump_generation_on_spec_change(new, old);
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = FieldErrors::new();
        let name = str_of(&object["metadata"], "name");
        if name.len() > MAX_CRON_JOB_NAME {
            errs.push(FieldError::invalid(
                &Path::root("metadata").child("name"),
                name,
                "must be no more than 52 characters",
            ));
        }
        errs.extend(Self::validate_spec(&object["spec"]));
        errs
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        Self::validate_spec(&new["spec"])
    }
}
