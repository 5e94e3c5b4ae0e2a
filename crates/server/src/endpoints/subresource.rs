//! The requests that are not reads or writes of the stored object itself, served generically
//! from their [`SubresourceKind`] data: the autoscaling/v1 `scale` view, creates answered by a
//! [`Creater`] hook (review resources that are never stored, pods/binding, pods/eviction,
//! serviceaccounts/token) and the node-agent streams and proxies (`connect` subresources),
//! which kapi cannot reach.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http::{Request, Response, StatusCode, header};
use kapi_apimachinery::gotime::{Timestamp, human_duration, parse_rfc3339};
use kapi_apimachinery::labels;
use kapi_apimachinery::request_info::RequestInfo;
use kapi_apimachinery::schema::{GroupKind, GroupResource};
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde_json::{Map, Value, json};

use super::decoded_type::ExpectedType;
use super::handlers::{answer, content_type, patch_error, read_body};
use super::negotiation;
use super::params::{self, Query};
use super::render::{CREATED_AT_DESCRIPTION, IncludeObject, NAME_DESCRIPTION, Renderer, encode};
use super::{Apis, Served, header_str, response, router_error};
use crate::admission::{Admission, Attributes, Operation, Warnings, WriteAdmission};
use crate::audit::AuditAnnotations;
use crate::authn::UserInfo;
use crate::body::{Body, BoxError};
use crate::object;
use crate::registry::{ReadVersion, Write};
use crate::resource::{
    Api, ConnectFn, ConnectRequest, CreateRequest, Creater, PrinterColumn, ResourceDefinition,
    ScalePaths, ScaleSelector, Subresource, SubresourceKind, TableConvertor,
};

/// The API version of every Scale served (upstream serves the built-in resources' and CRDs'
/// scale subresources as autoscaling/v1).
const SCALE_API_VERSION: &str = "autoscaling/v1";

/// A request served here rather than by the stored object's handlers.
pub(super) enum Special {
    Scale(ScalePaths),
    /// A create answered by a hook; `on_object` when it is a subresource of a named object.
    Create {
        hook: Arc<dyn Creater>,
        on_object: bool,
    },
    Connect(ConnectFn),
}

impl Special {
    /// How the request is served, if not by the stored object's handlers.
    pub(super) fn of(
        definition: &ResourceDefinition,
        subresource: Option<&Subresource>,
        info: &RequestInfo,
    ) -> Option<Special> {
        match subresource.map(|sub| &sub.kind) {
            Some(SubresourceKind::Scale(paths)) => Some(Special::Scale(paths.clone())),
            Some(SubresourceKind::Create(hook)) => Some(Special::Create {
                hook: hook.0.clone(),
                on_object: true,
            }),
            Some(SubresourceKind::Connect(connect)) => Some(Special::Connect(*connect)),
            None if info.verb == "create" => {
                definition.strategy.creater().map(|hook| Special::Create {
                    hook,
                    on_object: false,
                })
            }
            _ => None,
        }
    }

    /// Whether a create names an object in its path (`POST .../pods/x/eviction`).
    pub(super) fn takes_named_create(&self) -> bool {
        match self {
            Special::Scale(_) => false,
            Special::Create { on_object, .. } => *on_object,
            Special::Connect(_) => true,
        }
    }
}

/// One request's parts the special handlers need.
struct Call<'a> {
    apis: &'a Apis,
    served: &'a Served,
    info: &'a RequestInfo,
    namespace: &'a str,
    query: Query,
    /// The write options of the query, as admission sees them.
    write_options: Value,
    accept: Option<String>,
    content_type: Option<String>,
    extensions: http::Extensions,
    /// The authenticated requester.
    user: UserInfo,
    /// The response's warnings.
    warnings: Warnings,
    /// The request's audit event.
    audit: AuditAnnotations,
    /// The User-Agent, the manager of writes that name no fieldManager.
    user_agent: String,
}

impl Call<'_> {
    fn resource(&self) -> GroupResource {
        self.served.definition.group_resource()
    }

    /// Renders `document` as the client accepts (JSON, YAML, or protobuf for kinds that
    /// have it).
    fn respond(&self, status: StatusCode, document: &Value) -> Result<Response<Body>, ApiError> {
        let protobuf = self.serves_protobuf(document);
        let go_type = super::handlers::go_type(&self.served.definition, false);
        let shape = negotiation::Shape::Object(&go_type);
        let output = match negotiation::negotiate(self.accept.as_deref(), shape, protobuf)? {
            out @ (negotiation::Output::Yaml | negotiation::Output::Protobuf) => out,
            _ => negotiation::Output::Json,
        };
        Ok(response(
            status,
            content_type(output),
            encode(output, document)?,
        ))
    }

    /// Whether `document` may be answered in protobuf: never for custom resources (their
    /// status included, as upstream), else when its kind is in the schema table.
    fn serves_protobuf(&self, document: &Value) -> bool {
        let field = |name: &str| document[name].as_str().unwrap_or_default();
        !self.served.definition.capabilities.dynamic
            && self
                .apis
                .schemas()
                .is_some_and(|s| s.serves_protobuf(field("apiVersion"), field("kind")))
    }

    /// Renders a Scale as the client accepts: JSON, YAML, or a Table with upstream's Scale
    /// columns (`kubectl get --subresource=scale`).
    fn respond_scale(&self, scale: Value) -> Result<Response<Body>, ApiError> {
        // Scales are autoscaling/v1's, in protobuf too, custom resources' included: upstream
        // serves their scale with a codec factory of autoscaling's scheme (and holds the
        // versioned type there, `*v1.Scale`, where built-in scales are internal).
        let go_type = match self.served.definition.capabilities.dynamic {
            true => "*v1.Scale",
            false => "*autoscaling.Scale",
        };
        let shape = negotiation::Shape::Object(go_type);
        let output = negotiation::negotiate(self.accept.as_deref(), shape, true)?;
        let definition = ResourceDefinition {
            table: Some(scale_table()),
            ..ResourceDefinition::clone(&self.served.definition)
        };
        let renderer = Renderer {
            definition: &definition,
            output,
            include_object: IncludeObject::parse(self.query.get("includeObject"))?,
        };
        Ok(response(
            StatusCode::OK,
            content_type(output),
            renderer.value(scale)?,
        ))
    }

    /// The stored object the request names, decoded.
    async fn object(&self, version: &ReadVersion) -> Result<Value, ApiError> {
        let registry = &self.served.registry;
        let item = registry
            .get(&self.resource(), self.namespace, &self.info.name, version)
            .await?;
        item.decode()
    }
}

/// Serves a [`Special`] request.
pub(super) async fn serve<B>(
    apis: &Apis,
    served: &Served,
    info: &RequestInfo,
    namespace: &str,
    special: Special,
    request: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let query = Query::parse(request.uri().query());
    // Only writes are admitted with options.
    let write_options = match info.verb.as_str() {
        "create" | "update" | "patch" => super::params::write_options_json(&query),
        _ => Value::Null,
    };
    let call = Call {
        apis,
        served,
        info,
        namespace,
        query,
        write_options,
        accept: header_str(&request, header::ACCEPT).map(str::to_string),
        content_type: header_str(&request, header::CONTENT_TYPE).map(str::to_string),
        extensions: request.extensions().clone(),
        user: request
            .extensions()
            .get::<UserInfo>()
            .cloned()
            .unwrap_or_else(UserInfo::anonymous),
        warnings: Warnings::default(),
        audit: AuditAnnotations::of(request.extensions()),
        user_agent: header_str(&request, header::USER_AGENT)
            .unwrap_or_default()
            .to_string(),
    };
    let body = request.into_body();
    let read = |body| {
        let schemas = call.apis.schemas();
        read_body(body, schemas, call.content_type.as_deref(), &call.audit)
    };
    let response = async {
        match (special, info.verb.as_str()) {
            (Special::Scale(paths), "get") => scale_get(&call, &paths).await,
            (Special::Scale(paths), "update") => {
                scale_update(&call, &paths, read(body).await?).await
            }
            (Special::Scale(paths), "patch") => scale_patch(&call, &paths, read(body).await?).await,
            (Special::Create { hook, .. }, "create") => {
                create(&call, hook.as_ref(), read(body).await?).await
            }
            (Special::Connect(connect), _) => {
                let object = call.object(&ReadVersion::MostRecent).await?;
                let request = ConnectRequest {
                    subresource: &info.subresource,
                    container: call.query.get("container"),
                };
                let body = connect(&request, &object)?;
                Ok(response(StatusCode::OK, "text/plain", body.into_bytes()))
            }
            _ => Err(router_error(
                405,
                "MethodNotAllowed",
                "the server does not allow this method on the requested resource",
            )),
        }
    }
    .await;
    answer(response, &call.warnings, call.accept.as_deref())
}

/// The autoscaling/v1 Scale of `object`: its name, namespace, uid, resourceVersion and
/// creationTimestamp, the desired and observed replicas and the selector as a string.
pub fn scale_of(object: &Value, paths: &ScalePaths) -> Value {
    let mut metadata = Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = object["metadata"].get(field).filter(|v| !v.is_null()) {
            metadata.insert(field.into(), value.clone());
        }
    }
    let replicas = |pointer: &str| object.pointer(pointer).and_then(Value::as_i64);
    let mut spec = Map::new();
    if let Some(desired) = replicas(&paths.spec_replicas).filter(|n| *n != 0) {
        spec.insert("replicas".into(), desired.into());
    }
    let mut status = Map::new();
    status.insert(
        "replicas".into(),
        replicas(&paths.status_replicas).unwrap_or(0).into(),
    );
    let selector = selector_string(object, &paths.selector);
    if !selector.is_empty() {
        status.insert("selector".into(), selector.into());
    }
    json!({
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": metadata,
        "spec": spec,
        "status": status,
    })
}

/// The selector of `object` in the string form of a Scale's `status.selector`.
fn selector_string(object: &Value, selector: &ScaleSelector) -> String {
    match selector {
        ScaleSelector::LabelSelector(pointer) => {
            let selector = object.pointer(pointer).unwrap_or(&Value::Null);
            labels::from_label_selector(selector)
                .map(|s| s.to_string())
                .unwrap_or_default()
        }
        ScaleSelector::Map(pointer) => {
            let wrapped = json!({ "matchLabels": object.pointer(pointer).cloned() });
            labels::from_label_selector(&wrapped)
                .map(|s| s.to_string())
                .unwrap_or_default()
        }
        ScaleSelector::String(pointer) => object
            .pointer(pointer)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string(),
    }
}

/// The columns upstream prints a Scale with: Name, Desired, Available and Age.
fn scale_table() -> TableConvertor {
    let column =
        |name: &'static str, type_: &'static str, description: &'static str| PrinterColumn {
            name: name.into(),
            type_: type_.into(),
            format: "".into(),
            description: description.into(),
            priority: 0,
        };
    TableConvertor {
        order: None,
        columns: vec![
            column("Name", "string", NAME_DESCRIPTION),
            column(
                "Desired",
                "integer",
                "replicas is the desired number of instances for the scaled object.",
            ),
            column(
                "Available",
                "integer",
                "replicas is the actual number of observed instances of the scaled object.",
            ),
            column("Age", "string", CREATED_AT_DESCRIPTION),
        ],
        cells: std::sync::Arc::new(|scale: &serde_json::Value| {
            let created = scale["metadata"]["creationTimestamp"].as_str();
            vec![
                scale["metadata"]["name"].clone(),
                scale["spec"]["replicas"].as_i64().unwrap_or(0).into(),
                scale["status"]["replicas"].as_i64().unwrap_or(0).into(),
                age(created, Timestamp::now()).into(),
            ]
        }),
    }
}

/// How long ago an RFC 3339 timestamp was, as kubectl's AGE columns print it;
/// `<unknown>` without one, as upstream's translateTimestampSince.
fn age(timestamp: Option<&str>, now: Timestamp) -> String {
    match timestamp.and_then(parse_rfc3339) {
        Some(then) => human_duration(now.nanos_since(then)),
        None => "<unknown>".into(),
    }
}

/// `object` with the replicas `scale` asks for, its resourceVersion as the write's
/// precondition; a Conflict when the Scale's uid names another object.
pub fn apply_scale(
    object: &Value,
    scale: &Value,
    paths: &ScalePaths,
    resource: &GroupResource,
) -> Result<Value, ApiError> {
    let (wanted_uid, uid) = (object::uid(scale), object::uid(object));
    if !wanted_uid.is_empty() && wanted_uid != uid {
        return Err(ApiError::conflict(
            resource,
            object::name(object),
            format!(
                "Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: {uid}"
            ),
        ));
    }
    let mut updated = object.clone();
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    set_pointer(&mut updated, &paths.spec_replicas, replicas.into());
    let version = object::resource_version(scale).to_string();
    object::set_meta(&mut updated, "resourceVersion", version.into());
    Ok(updated)
}

/// Sets the value at a JSON pointer, creating the objects on the way.
fn set_pointer(object: &mut Value, pointer: &str, value: Value) {
    let mut target = object;
    let mut fields = pointer.trim_start_matches('/').split('/').peekable();
    while let Some(field) = fields.next() {
        if !target.is_object() {
            *target = json!({});
        }
        let map = target.as_object_mut().expect("made an object above");
        if fields.peek().is_none() {
            map.insert(field.to_string(), value);
            return;
        }
        target = map.entry(field.to_string()).or_insert_with(|| json!({}));
    }
}

/// Checks a written Scale as upstream's ValidateScale: the replicas are not negative.
pub fn validate_scale(scale: &Value) -> Result<(), ApiError> {
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    let mut errors = FieldErrors::new();
    if replicas < 0 {
        errors.push(FieldError::invalid(
            &Path::root("spec").child("replicas"),
            replicas,
            "must be greater than or equal to 0",
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    let kind = GroupKind::new("autoscaling", "Scale");
    Err(ApiError::invalid(&kind, object::name(scale), &errors))
}

async fn scale_get(call: &Call<'_>, paths: &ScalePaths) -> Result<Response<Body>, ApiError> {
    let object = call.object(&params::get_version(&call.query)?).await?;
    call.respond_scale(scale_of(&object, paths))
}

/// Writes the replicas of `scale` through the resource's own update path (its strategy and
/// validation run, as upstream's scale storage updates the parent object).
async fn write_scale(
    call: &Call<'_>,
    paths: &ScalePaths,
    (dry_run, field_manager): (bool, &str),
    mut scale_for: impl FnMut(&Value) -> Result<Value, ApiError>,
) -> Result<Response<Body>, ApiError> {
    let definition = &call.served.definition;
    let manager = kapi_fieldmanager::manager_or_user_agent(field_manager, &call.user_agent);
    let resource = call.resource();
    let admission = ScaleAdmission {
        admission: call.admission(&call.info.name, dry_run),
        paths,
        resource: resource.clone(),
    };
    let write = Write {
        subresource: None,
        dry_run,
        admission: Some(&admission),
        manager: None,
    };
    let (object, _) = call
        .served
        .registry
        .update(
            definition,
            call.namespace,
            &call.info.name,
            write,
            |current| {
                let current =
                    current.ok_or_else(|| ApiError::not_found(&resource, &call.info.name))?;
                let scale = scale_for(&scale_of(current, paths))?;
                validate_scale(&scale)?;
                let updated = apply_scale(current, &scale, paths, &resource)?;
                super::handlers::track_subresource_update(
                    call.apis, definition, "scale", &manager, current, updated,
                )
            },
        )
        .await?;
    call.respond_scale(scale_of(&object, paths))
}

async fn scale_update(
    call: &Call<'_>,
    paths: &ScalePaths,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let dry_run = params::dry_run(&call.query, "UpdateOptions")?;
    let options = params::write_options(
        &call.query,
        "UpdateOptions",
        params::WriteKind::CreateOrUpdate,
    )?;
    let scale = decode_as(call, &body, ("autoscaling", "v1", "Scale"), &[])?;
    let (name, url_name) = (object::name(&scale), call.info.name.as_str());
    if name != url_name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        )));
    }
    let write = (dry_run, options.field_manager.as_str());
    write_scale(call, paths, write, |_| Ok(scale.clone())).await
}

async fn scale_patch(
    call: &Call<'_>,
    paths: &ScalePaths,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let dry_run = params::dry_run(&call.query, "PatchOptions")?;
    let options = params::write_options(&call.query, "PatchOptions", params::WriteKind::Patch)?;
    let content_type = call.content_type.as_deref().unwrap_or_default();
    let patch_type = super::handlers::patch_type(&call.served.definition, content_type)?;
    kapi_patch::validate_body(&body).map_err(|err| patch_error(&err))?;
    let write = (dry_run, options.field_manager.as_str());
    write_scale(call, paths, write, |current| {
        kapi_patch::apply(patch_type, current, &body, &kapi_patch::MetadataSchema)
            .map_err(|err| patch_error(&err))
    })
    .await
}

/// Decodes a request body that must be of `group`/`version`/`kind` (filled in when absent) or
/// of the kind in one of the `also_accepted` apiVersions, refusing another type as upstream's
/// create handler does.
fn decode_as(
    call: &Call<'_>,
    body: &[u8],
    (group, version, kind): (&str, &str, &str),
    also_accepted: &[&str],
) -> Result<Value, ApiError> {
    let mut object =
        negotiation::decode_body(call.apis.schemas(), call.content_type.as_deref(), body)?;
    let definition = &call.served.definition;
    let expected = ExpectedType {
        group,
        version,
        kind,
        // A subresource of its own kind (autoscaling/v1 Scale, ...) is typed whatever the
        // parent is.
        typed: definition.capabilities.typed || kind != definition.kind,
        also_accepted,
    };
    expected.check_body(call.apis, &mut object)?;
    Ok(object)
}

impl Call<'_> {
    /// The server's admission plugins bound to this request, on the object `name`.
    fn admission<'b>(&'b self, name: &'b str, dry_run: bool) -> Admission<'b> {
        Admission {
            plugins: self.apis.admission(),
            attributes: Attributes {
                operation: Operation::Create,
                definition: &self.served.definition,
                subresource: &self.info.subresource,
                namespace: self.namespace,
                name,
                user: &self.user,
                dry_run,
                options: &self.write_options,
                warnings: &self.warnings,
                audit: &self.audit,
            },
        }
    }
}

/// Admission of a scale write. Plugins see autoscaling/v1 Scale objects, as upstream's scale
/// subresource admits them; the replicas they set are written to the parent object.
struct ScaleAdmission<'a> {
    admission: Admission<'a>,
    paths: &'a ScalePaths,
    resource: GroupResource,
}

#[async_trait]
impl WriteAdmission for ScaleAdmission<'_> {
    async fn mutate(
        &self,
        operation: Operation,
        object: &mut Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let mut scale = scale_of(object, self.paths);
        let old = old.map(|old| scale_of(old, self.paths));
        self.admission
            .mutate(operation, &mut scale, old.as_ref())
            .await?;
        *object = apply_scale(object, &scale, self.paths, &self.resource)?;
        Ok(())
    }

    async fn validate(
        &self,
        operation: Operation,
        object: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let scale = object.map(|object| scale_of(object, self.paths));
        let old = old.map(|old| scale_of(old, self.paths));
        self.admission
            .validate(operation, scale.as_ref(), old.as_ref())
            .await
    }
}

/// What a [`Creater`] reaches: the other served resources, the server's services and the
/// request's extensions.
struct RequestApi<'a> {
    apis: &'a Apis,
    services: http::Extensions,
}

impl Api for RequestApi<'_> {
    fn resource(&self, group: &str, resource: &str) -> Option<Served> {
        self.apis.served_storage(group, resource)
    }

    fn services(&self) -> &http::Extensions {
        &self.services
    }
}

/// A create answered by its hook, 201 Created with what the hook returns.
async fn create(
    call: &Call<'_>,
    hook: &dyn Creater,
    body: Bytes,
) -> Result<Response<Body>, ApiError> {
    let dry_run = params::dry_run(&call.query, "CreateOptions")?;
    let definition = &call.served.definition;
    let object = match definition.subresource(&call.info.subresource) {
        Some(subresource) => {
            let (group, version, kind) =
                crate::discovery::subresource_kind(definition, subresource);
            decode_as(call, &body, (&group, &version, &kind), hook.also_accepted())?
        }
        None => {
            let gv = &definition.group_version;
            let kind = (gv.group.as_str(), gv.version.as_str(), &*definition.kind);
            decode_as(call, &body, kind, hook.also_accepted())?
        }
    };
    let name = if call.info.name.is_empty() {
        object::name(&object).to_string()
    } else {
        call.info.name.clone()
    };
    let mut object = object;
    if call.info.subresource.is_empty() {
        crate::registry::check_namespace(&call.served.definition, call.namespace, &mut object)?;
    }
    let admission = call.admission(&name, dry_run);
    admission
        .mutate(Operation::Create, &mut object, None)
        .await?;
    admission
        .validate(Operation::Create, Some(&object), None)
        .await?;
    let user = &call.user;
    let mut services = call.extensions.clone();
    services.extend(call.apis.services.clone());
    let api = RequestApi {
        apis: call.apis,
        services,
    };
    let request = CreateRequest {
        user,
        namespace: call.namespace,
        name: &call.info.name,
        object,
        dry_run,
        api: &api,
    };
    let created = hook.create(request).await?;
    call.respond(StatusCode::CREATED, &created)
}

#[cfg(test)]
mod tests;
