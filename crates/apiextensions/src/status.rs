//! What the CRD controllers compute for a CRD's status: accepted names (upstream's naming
//! controller), Established, API approval and non-structural schemas. Conditions are set with
//! [`crate::crd::access::set_condition`] (upstream's SetCRDCondition).

use kapi_apimachinery::validation::field::Path;
use serde_json::{Value, json};

use crate::crd::access::{Condition, find_condition, strings};
use crate::crd::approval::{
    API_APPROVAL_ANNOTATION, ApprovalState, approval_state, is_protected_community_group,
};

/// A condition of `type_` with `status`, `reason` and `message`.
pub(crate) fn condition(
    type_: &str,
    status: &str,
    reason: impl Into<String>,
    message: impl Into<String>,
) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: status.to_string(),
        reason: reason.into(),
        message: message.into(),
    }
}

/// The names in use by the other CRDs of a group: resource names (plural, singular, short
/// names) and kinds (kind, listKind).
struct UsedNames {
    resources: Vec<String>,
    kinds: Vec<String>,
}

impl UsedNames {
    fn of(others: &[Value]) -> UsedNames {
        let mut used = UsedNames {
            resources: Vec::new(),
            kinds: Vec::new(),
        };
        for names in others {
            let text = |key: &str| names[key].as_str().unwrap_or_default().to_string();
            used.resources.extend([text("plural"), text("singular")]);
            used.resources.extend(strings(&names["shortNames"]));
            used.kinds.extend([text("kind"), text("listKind")]);
        }
        used
    }
}

/// Upstream's equalToAcceptedOrFresh: a requested name is fine if it is already ours or no
/// other CRD of the group uses it.
fn fresh(requested: &str, accepted: &str, used: &[String]) -> Result<(), String> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        return Ok(());
    }
    Err(format!("{requested:?} is already in use"))
}

/// The naming controller: the names `crd` may use given the accepted names of the other CRDs
/// of its group, and its NamesAccepted condition.
pub fn accept_names(crd: &Value, others: &[Value]) -> (Value, Condition) {
    let used = UsedNames::of(others);
    let requested = &crd["spec"]["names"];
    let accepted = &crd["status"]["acceptedNames"];
    let mut names = if accepted.is_object() {
        accepted.clone()
    } else {
        json!({"plural": "", "kind": ""})
    };
    let mut conflict: Option<(&str, String)> = None;
    let checks: [(&str, &str, &[String]); 4] = [
        ("plural", "PluralConflict", &used.resources),
        ("singular", "SingularConflict", &used.resources),
        ("kind", "KindConflict", &used.kinds),
        ("listKind", "ListKindConflict", &used.kinds),
    ];
    for (key, reason, in_use) in checks {
        let want = requested[key].as_str().unwrap_or_default();
        let have = accepted[key].as_str().unwrap_or_default();
        match fresh(want, have, in_use) {
            Ok(()) if want.is_empty() => {}
            Ok(()) => names[key] = Value::from(want),
            Err(message) => conflict = Some((reason, message)),
        }
        if key == "singular" {
            accept_short_names(
                requested,
                accepted,
                &used.resources,
                &mut names,
                &mut conflict,
            );
        }
    }
    match requested.get("categories") {
        Some(categories) => names["categories"] = categories.clone(),
        None => drop(names.as_object_mut().map(|n| n.remove("categories"))),
    }
    let condition = match conflict {
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
    };
    (names, condition)
}

/// The short names part of [`accept_names`]: all or none.
fn accept_short_names(
    requested: &Value,
    accepted: &Value,
    used: &[String],
    names: &mut Value,
    conflict: &mut Option<(&str, String)>,
) {
    let want = strings(&requested["shortNames"]);
    let have = strings(&accepted["shortNames"]);
    if want == have {
        return;
    }
    let errors: Vec<String> = want
        .iter()
        .filter(|name| !have.contains(name))
        .filter_map(|name| fresh(name, "", used).err())
        .collect();
    match errors.as_slice() {
        [] if want.is_empty() => drop(names.as_object_mut().map(|n| n.remove("shortNames"))),
        [] => names["shortNames"] = json!(want),
        [one] => *conflict = Some(("ShortNamesConflict", one.clone())),
        many => *conflict = Some(("ShortNamesConflict", format!("[{}]", many.join(", ")))),
    }
}

/// The Established condition, given the NamesAccepted one: once True it stays True (the
/// establishing controller sets it as soon as the initial names are accepted, kapi serving
/// from one process needs no delay for other servers).
pub fn established(crd: &Value, names_accepted: &Condition) -> Condition {
    if let Some(current) = find_condition(crd, "Established")
        && current["status"] == "True"
    {
        let text = |key: &str| current[key].as_str().unwrap_or_default().to_string();
        return condition("Established", "True", text("reason"), text("message"));
    }
    if names_accepted.status == "True" {
        return condition(
            "Established",
            "True",
            "InitialNamesAccepted",
            "the initial names have been accepted",
        );
    }
    condition(
        "Established",
        "False",
        "NotAccepted",
        "not all names are accepted",
    )
}

/// The KubernetesAPIApprovalPolicyConformant condition of a CRD in a protected group
/// (upstream's apiapproval controller).
pub fn approval_condition(crd: &Value) -> Option<Condition> {
    if !is_protected_community_group(crd["spec"]["group"].as_str().unwrap_or_default()) {
        return None;
    }
    let annotation = crd["metadata"]["annotations"][API_APPROVAL_ANNOTATION]
        .as_str()
        .unwrap_or_default();
    let (state, message) = approval_state(annotation);
    let (status, reason) = match state {
        ApprovalState::Approved => ("True", "ApprovedAnnotation"),
        ApprovalState::Bypassed => ("False", "UnapprovedAnnotation"),
        ApprovalState::Missing => ("False", "MissingAnnotation"),
        ApprovalState::Invalid => ("False", "InvalidAnnotation"),
    };
    Some(condition(
        "KubernetesAPIApprovalPolicyConformant",
        status,
        reason,
        message,
    ))
}

/// The NonStructuralSchema condition: set while a version's schema is not structural (v1
/// CRDs cannot be created so, but may have been stored before).
pub fn non_structural_condition(crd: &Value) -> Option<Condition> {
    let mut violations = Vec::new();
    for (i, version) in crd["spec"]["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let schema = &version["schema"]["openAPIV3Schema"];
        if !schema.is_object() {
            continue;
        }
        let path = Path::root("spec")
            .child("versions")
            .index(i)
            .child("schema")
            .child("openAPIV3Schema");
        let errors = crate::schema::validate_structural(schema, &path);
        violations.extend(errors.iter().map(ToString::to_string));
    }
    if violations.is_empty() {
        return None;
    }
    Some(condition(
        "NonStructuralSchema",
        "True",
        "Violations",
        violations.join(", "),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(names: Value, accepted: Value) -> Value {
        json!({
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {"group": "stable.example.com", "names": names},
            "status": {"acceptedNames": accepted},
        })
    }

    #[test]
    fn names_without_conflicts_are_accepted() {
        let crd = crd(
            json!({"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                   "listKind": "CronTabList", "shortNames": ["ct"], "categories": ["all"]}),
            Value::Null,
        );
        let (names, condition) = accept_names(&crd, &[]);
        assert_eq!(condition.status, "True");
        assert_eq!(condition.reason, "NoConflicts");
        assert_eq!(
            names,
            json!({"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                   "listKind": "CronTabList", "shortNames": ["ct"], "categories": ["all"]})
        );
        let established = established(&crd, &condition);
        assert_eq!(established.reason, "InitialNamesAccepted");
    }

    #[test]
    fn conflicts_keep_the_name_and_say_why() {
        let other = json!({"plural": "crontabs", "singular": "crontab", "kind": "Other",
                           "listKind": "OtherList", "shortNames": ["ct"]});
        let requested = json!({"plural": "crontabs", "singular": "crontab2", "kind": "CronTab",
                               "listKind": "CronTabList", "shortNames": ["ct"]});
        let crd = crd(requested, Value::Null);
        let (names, condition) = accept_names(&crd, &[other]);
        assert_eq!(condition.status, "False");
        assert_eq!(condition.reason, "ShortNamesConflict");
        assert_eq!(condition.message, "\"ct\" is already in use");
        assert_eq!(names["plural"], "");
        assert_eq!(names["kind"], "CronTab");
        assert_eq!(established(&crd, &condition).reason, "NotAccepted");
    }

    #[test]
    fn approval_states() {
        let with = |group: &str, annotation: Option<&str>| {
            let mut crd = json!({"spec": {"group": group}, "metadata": {}});
            if let Some(a) = annotation {
                crd["metadata"]["annotations"] = json!({API_APPROVAL_ANNOTATION: a});
            }
            approval_condition(&crd).map(|c| (c.status, c.reason))
        };
        let pair = |status: &str, reason: &str| Some((status.to_string(), reason.to_string()));
        assert_eq!(with("example.com", None), None);
        assert_eq!(with("x.k8s.io", None), pair("False", "MissingAnnotation"));
        let url = Some("https://github.com/kubernetes/kubernetes/pull/1");
        assert_eq!(with("k8s.io", url), pair("True", "ApprovedAnnotation"));
        let bypassed = Some("unapproved, testing");
        assert_eq!(
            with("a.kubernetes.io", bypassed),
            pair("False", "UnapprovedAnnotation")
        );
        assert_eq!(
            with("a.kubernetes.io", Some("nope")),
            pair("False", "InvalidAnnotation")
        );
    }
}
