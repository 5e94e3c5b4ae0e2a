//! The verb handlers: get, list, watch, create, update, patch, delete and deletecollection,
//! for every resource and its subresources, as kube-apiserver's endpoints/handlers do.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use kapi_apimachinery::meta;
use kapi_apimachinery::request_info::RequestInfo;
use kapi_apimachinery::status::{ApiError, Status, StatusCause, StatusDetails};
use kapi_fieldmanager::FieldManager;
use kapi_patch::PatchType;
use kapi_schema::{KindSchema, SchemaRef};
use serde_json::{Value, json};

use super::decoded_type::{self, PatchedType};
use super::list_body::{self, ListBody};
use super::negotiation::{self, Output};
use super::params::{self, Query, WriteKind, WriteOptions};
use super::render::{IncludeObject, Renderer};
use super::watch::{self, WatchRequest};
use super::{Apis, MAX_BODY, Served, header_str, not_found, response, router_error};
use crate::admission::{Admission, Attributes, Operation, Warnings};
use crate::audit::{AuditAnnotations, Level};
use crate::body::{Body, BoxError};
use crate::object;
use crate::registry::{DeleteOutcome, ReadVersion, Write};
use crate::resource::{ResourceDefinition, Subresource, SubresourceKind, Verbs};
use crate::serving::ResponseDeadline;

/// One resource request, resolved.
struct Context<'a> {
    apis: &'a Apis,
    served: Served,
    info: &'a RequestInfo,
    subresource: Option<Subresource>,
    query: Query,
    /// The write options of the query, as admission sees them.
    write_options: Value,
    /// The namespace of a namespaced resource ("" otherwise).
    namespace: String,
    accept: Option<String>,
    content_type: Option<String>,
    /// The User-Agent, which names the field manager of writes without `fieldManager`.
    user_agent: String,
    /// The authenticated requester.
    user: crate::authn::UserInfo,
    /// The `Warning` headers of the response (e.g. unknown fields with `fieldValidation=Warn`).
    warnings: Warnings,
    /// The request's audit event.
    audit: AuditAnnotations,
    /// The deadline of the response on its HTTP/1.1 connection (none over HTTP/2, whose
    /// connections carry other requests).
    connection_deadline: Option<ResponseDeadline>,
    /// Whether the request came over HTTP/2.
    http2: bool,
    /// A watch's signal to flow control that its initial events are sent.
    watch_initialized: Option<crate::filters::flow_control::WatchInitialized>,
}

/// The Go type kube-apiserver's handler holds for the resource's objects or lists (its
/// internal type's package and name, `%T`), which some of its messages name.
pub(super) fn go_type(definition: &ResourceDefinition, list: bool) -> String {
    let suffix = if list { "List" } else { "" };
    if definition.capabilities.dynamic {
        return format!("*unstructured.Unstructured{suffix}");
    }
    let package = match definition.group_version.group.as_str() {
        // Events of events.k8s.io are core's internal Event.
        "" | "events.k8s.io" => "core",
        "internal.apiserver.k8s.io" => "apiserverinternal",
        group => group.split('.').next().unwrap_or(group),
    };
    format!("*{package}.{}{suffix}", definition.kind)
}

impl Context<'_> {
    fn definition(&self) -> &Arc<ResourceDefinition> {
        &self.served.definition
    }

    /// The output the request's Accept header negotiates for one object or a list.
    fn negotiate(&self, list: bool) -> Result<Output, ApiError> {
        self.negotiate_before_read(list)?
    }

    /// [`Context::negotiate`] for a read, whose wrong-shape refusal (the inner error) comes
    /// after the read's own errors.
    fn negotiate_before_read(&self, list: bool) -> Result<Result<Output, ApiError>, ApiError> {
        let protobuf = self.apis.serves_protobuf(self.definition());
        let go_type = go_type(self.definition(), list);
        let shape = match list {
            true => negotiation::Shape::List(&go_type),
            false => negotiation::Shape::Object(&go_type),
        };
        negotiation::negotiate_before_read(self.accept.as_deref(), shape, protobuf)
    }

    fn renderer(&self, output: Output) -> Result<Renderer<'_>, ApiError> {
        Ok(Renderer {
            definition: self.definition(),
            output,
            include_object: IncludeObject::parse(self.query.get("includeObject"))?,
        })
    }

    /// Renders one served object with `status`.
    fn respond_object(
        &self,
        status: StatusCode,
        object: Value,
    ) -> Result<Response<Body>, ApiError> {
        let output = self.negotiate(false)?;
        let body = self.renderer(output)?.value(object)?;
        Ok(response(status, content_type(output), body))
    }

    /// Adds warnings to the response, each once.
    fn warn(&self, warnings: Vec<String>) {
        for warning in warnings {
            self.warnings.add(warning);
        }
    }

    /// The schema of the endpoint's kind, if the server has one.
    fn kind_schema(&self) -> Option<kapi_schema::KindSchema> {
        let definition = self.definition();
        let gv = &definition.group_version;
        self.apis
            .schemas
            .as_ref()?
            .kind_schema(&gv.group, &gv.version, &definition.kind)
    }

    /// The server's admission plugins bound to this request, on the object `name` ("" when
    /// the object names itself). The registry runs it within the write.
    fn admission<'b>(&'b self, name: &'b str) -> Admission<'b> {
        Admission {
            plugins: self.apis.admission(),
            attributes: Attributes {
                operation: Operation::Create,
                definition: self.definition(),
                subresource: self.subresource.as_ref().map_or("", |sub| sub.name),
                namespace: &self.namespace,
                name,
                user: &self.user,
                dry_run: self.query.get("dryRun").is_some(),
                options: &self.write_options,
                warnings: &self.warnings,
                audit: &self.audit,
            },
        }
    }
}

/// Dispatches a resource request to its verb's handler.
pub(super) async fn resource<B>(
    apis: &Apis,
    info: &RequestInfo,
    request: Request<B>,
) -> Result<Response<Body>, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let key = (
        info.api_group.clone(),
        info.api_version.clone(),
        info.resource.clone(),
    );
    let Some(served) = apis.served(&key) else {
        return unknown_resource(apis, info);
    };
    let definition = served.definition.clone();
    let deprecation = definition.deprecation.iter().cloned();
    let subresource = match info.subresource.as_str() {
        "" => None,
        name => Some(definition.subresource(name).cloned().ok_or_else(|| {
            // The CRD handler names the object; the router knows no such route.
            match definition.capabilities.dynamic {
                true => ApiError::not_found(&definition.group_resource(), &info.name),
                false => not_found(),
            }
        })?),
    };
    let namespace = match scoped_namespace(&definition, info) {
        Ok(namespace) => namespace,
        // The CRD handler passes a request of the wrong scope on, to the final 404.
        Err(_) if definition.capabilities.dynamic => return Ok(crate::responses::not_found()),
        Err(err) => return Err(err),
    };
    let verbs = subresource
        .as_ref()
        .map_or(definition.verbs, |sub| sub.verbs);
    let special = super::subresource::Special::of(&definition, subresource.as_ref(), info);
    let named_create = info.verb == "create" && !info.name.is_empty();
    let named_create_allowed = special
        .as_ref()
        .is_some_and(super::subresource::Special::takes_named_create);
    if (named_create && !named_create_allowed)
        || !verb_flag(&info.verb).is_some_and(|verb| verbs.contains(verb))
    {
        return Err(method_not_allowed());
    }
    if let Some(special) = special {
        return super::subresource::serve(apis, &served, info, &namespace, special, request).await;
    }
    let query = Query::parse(request.uri().query());
    // Only writes are admitted with options.
    let write_options = match info.verb.as_str() {
        "create" | "update" | "patch" => params::write_options_json(&query),
        _ => Value::Null,
    };
    let context = Context {
        apis,
        served,
        info,
        subresource,
        query,
        write_options,
        namespace,
        accept: header_str(&request, header::ACCEPT).map(str::to_string),
        content_type: header_str(&request, header::CONTENT_TYPE).map(str::to_string),
        user_agent: header_str(&request, header::USER_AGENT)
            .unwrap_or_default()
            .to_string(),
        warnings: Warnings::new(deprecation),
        audit: AuditAnnotations::of(request.extensions()),
        http2: request.version() >= http::Version::HTTP_2,
        watch_initialized: request.extensions().get().cloned(),
        connection_deadline: (request.version() < http::Version::HTTP_2)
            .then(|| request.extensions().get::<ResponseDeadline>().cloned())
            .flatten(),
        user: request
            .extensions()
            .get::<crate::authn::UserInfo>()
            .cloned()
            .unwrap_or_else(crate::authn::UserInfo::anonymous),
    };
    let body = request.into_body();
    let read = |body| {
        let schemas = context.apis.schemas();
        read_body(
            body,
            schemas,
            context.content_type.as_deref(),
            &context.audit,
        )
    };
    let response = async {
        match info.verb.as_str() {
            "get" => get(&context).await,
            "list" => list(&context).await,
            "watch" => watch_(&context).await,
            "create" => create(&context, read(body).await?).await,
            "update" => update(&context, read(body).await?).await,
            "patch" => patch(&context, read(body).await?).await,
            "delete" => delete(&context, read(body).await?).await,
            "deletecollection" => delete_collection(&context, read(body).await?).await,
            _ => Err(method_not_allowed()),
        }
    }
    .await;
    answer(response, &context.warnings, context.accept.as_deref())
}

/// The answer to a request with its `Warning` headers: also an error's, since warnings
/// (a policy's, a deprecated version's) matter most when the request fails.
pub(super) fn answer(
    result: Result<Response<Body>, ApiError>,
    warnings: &Warnings,
    accept: Option<&str>,
) -> Result<Response<Body>, ApiError> {
    match result {
        Ok(response) => Ok(with_warnings(response, warnings)),
        Err(err) if warnings.all().is_empty() => Err(err),
        Err(err) => Ok(with_warnings(super::error_response(&err, accept), warnings)),
    }
}

/// `response` with the request's `Warning` headers.
fn with_warnings(mut response: Response<Body>, warnings: &Warnings) -> Response<Body> {
    for warning in warnings.all() {
        let value = super::decode::warning_header(&warning);
        if let Ok(value) = http::HeaderValue::from_str(&value) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// The 405 of a method no route serves at a path.
fn method_not_allowed() -> ApiError {
    router_error(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )
}

/// The namespace a request acts in: the path's for namespaced resources; none for cluster-
/// scoped ones, whose paths cannot name one (except namespaces themselves).
/// The 404 of a resource a served group version does not have: the router's Status for a
/// built-in group version; upstream's final plain 404 in a custom resources' group version,
/// whose CRD handler passes requests for unknown resources on.
fn unknown_resource(apis: &Apis, info: &RequestInfo) -> Result<Response<Body>, ApiError> {
    let resources = apis.resources();
    let custom = resources.definitions.iter().any(|d| {
        d.capabilities.dynamic
            && d.group_version.group == info.api_group
            && d.group_version.version == info.api_version
    });
    match custom {
        true => Ok(crate::responses::not_found()),
        false => Err(not_found()),
    }
}

fn scoped_namespace(
    definition: &ResourceDefinition,
    info: &RequestInfo,
) -> Result<String, ApiError> {
    if definition.namespaced {
        let across_namespaces = matches!(info.verb.as_str(), "list" | "watch");
        if info.namespace.is_empty() && !across_namespaces {
            return Err(not_found());
        }
        return Ok(info.namespace.clone());
    }
    if !info.namespace.is_empty() && info.resource != "namespaces" {
        return Err(not_found());
    }
    Ok(String::new())
}

fn verb_flag(verb: &str) -> Option<Verbs> {
    Some(match verb {
        "get" => Verbs::GET,
        "list" => Verbs::LIST,
        "watch" => Verbs::WATCH,
        "create" => Verbs::CREATE,
        "update" => Verbs::UPDATE,
        "patch" => Verbs::PATCH,
        "delete" => Verbs::DELETE,
        "deletecollection" => Verbs::DELETECOLLECTION,
        _ => return None,
    })
}

/// Reads a request body, at most 3 MiB.
pub(super) async fn read_body<B>(
    body: B,
    schemas: Option<&dyn super::SchemaProvider>,
    content_type: Option<&str>,
    audit: &AuditAnnotations,
) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    match http_body_util::Limited::new(body, MAX_BODY).collect().await {
        Ok(collected) => {
            let bytes = collected.to_bytes();
            if audit.level() > Level::None {
                // JSON (objects, patches, options) as sent, only its metadata when that is
                // all the level records; other encodings decoded.
                let object = if audit.level() == Level::Metadata {
                    crate::audit::metadata_only(&bytes)
                } else {
                    serde_json::from_slice(&bytes).ok()
                };
                let object =
                    object.or_else(|| negotiation::decode_body(schemas, content_type, &bytes).ok());
                if let Some(object) = object {
                    audit.log_request_object(object);
                }
            }
            Ok(bytes)
        }
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(
            ApiError::request_entity_too_large(format!("limit is {MAX_BODY}")),
        ),
        Err(err) => Err(ApiError::bad_request(err.to_string())),
    }
}

/// The Content-Type of a negotiated output, with its parameters as upstream sends them.
pub(super) fn content_type(output: Output) -> &'static str {
    match output {
        Output::Json => "application/json",
        Output::Yaml => "application/yaml",
        Output::Table { v1beta1: false } => "application/json;as=Table;v=v1;g=meta.k8s.io",
        Output::Table { v1beta1: true } => "application/json;as=Table;v=v1beta1;g=meta.k8s.io",
        Output::PartialMetadata {
            protobuf: false, ..
        } => "application/json",
        Output::Protobuf | Output::PartialMetadata { .. } => negotiation::PROTOBUF,
    }
}

async fn get(context: &Context<'_>) -> Result<Response<Body>, ApiError> {
    let output = context.negotiate_before_read(false)?;
    let version = params::get_version(&context.query)?;
    let resource = context.definition().group_resource();
    let item = context
        .served
        .registry
        .get(&resource, &context.namespace, &context.info.name, &version)
        .await?;
    let output = output?;
    let body = context.renderer(output)?.object(&item)?;
    Ok(response(StatusCode::OK, content_type(output), body))
}

async fn list(context: &Context<'_>) -> Result<Response<Body>, ApiError> {
    let output = context.negotiate_before_read(true)?;
    let namespace = Some(context.namespace.as_str()).filter(|ns| !ns.is_empty());
    let params = params::list_params(&context.query, context.definition(), namespace, false)?;
    let resource = context.definition().group_resource();
    let result = context.served.registry.list(&resource, &params).await?;
    let output = output?;
    let renderer = context.renderer(output)?;
    let chunk = match context.http2 {
        true => list_body::HTTP2_CHUNK,
        false => list_body::HTTP1_CHUNK,
    };
    let body = ListBody::body(&renderer, context.definition().clone(), result, chunk)?;
    let mut response = Response::new(body);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type(output)),
    );
    Ok(response)
}

async fn watch_(context: &Context<'_>) -> Result<Response<Body>, ApiError> {
    let output = context
        .negotiate(false)
        .or_else(|_| context.negotiate(true))?;
    let namespace = Some(context.namespace.as_str()).filter(|ns| !ns.is_empty());
    let params = params::watch_params(&context.query, context.definition(), namespace)?;
    let registry = &context.served.registry;
    let request = WatchRequest {
        definition: context.definition().clone(),
        cacher: registry.cacher().clone(),
        prefix: registry.collection_prefix(namespace),
        name: Some(context.info.name.clone()).filter(|name| !name.is_empty()),
        params,
        output,
        include_object: IncludeObject::parse(context.query.get("includeObject"))?,
        bookmark_interval: context.apis.bookmark_interval,
        connection_deadline: context.connection_deadline.clone(),
        initialized: context.watch_initialized.clone(),
    };
    let body = match watch::serve(request).await {
        Ok(body) => body,
        // As upstream, a watch that cannot start still answers 200, with one ERROR event.
        Err(err) if err.code() == 410 => crate::body::full(watch::error_frame(output, &err)),
        Err(err) => return Err(err),
    };
    let mut response = Response::new(body);
    let content_type = match output.is_protobuf() {
        true => "application/vnd.kubernetes.protobuf;stream=watch",
        false => "application/json",
    };
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    Ok(response)
}

/// Decodes an object body and checks its apiVersion and kind against the endpoint's,
/// filling them in when absent; then, when the server has the kind's schema, decodes it as
/// upstream's typed decoding does (unknown and duplicate fields per `fieldValidation`, type
/// errors).
fn decode_object(context: &Context<'_>, body: &[u8]) -> Result<Value, ApiError> {
    let json = context
        .content_type
        .as_deref()
        .is_none_or(|ct| negotiation::essence(ct) == "application/json");
    if json && let Some(err) = negotiation::malformed_json(&context.definition().kind, body) {
        return Err(err);
    }
    let mut object = negotiation::decode_body(
        context.apis.schemas(),
        context.content_type.as_deref(),
        body,
    )?;
    let definition = context.definition();
    decoded_type::ExpectedType::of(definition).check_body(context.apis, &mut object)?;
    let expected_kind = &definition.kind;
    if let Some(schema) = context.kind_schema() {
        let options = match context.info.verb.as_str() {
            "create" => "CreateOptions",
            _ => "UpdateOptions",
        };
        let directive = super::decode::directive(&context.query, options)?;
        let kind = (&**expected_kind, definition.group_version.version.as_str());
        let yaml = context
            .content_type
            .as_deref()
            .is_some_and(|ct| negotiation::essence(ct) == "application/yaml");
        let raw = match (json, yaml) {
            (true, _) => super::decode::RawBody::Json(body),
            (_, true) => super::decode::RawBody::Yaml(body),
            _ => super::decode::RawBody::Other,
        };
        let warnings =
            super::decode::decode_with_schema(&schema, kind, &mut object, raw, directive)?;
        context.warn(warnings);
    }
    definition.strategy.default(&mut object);
    Ok(object)
}

/// The stored form of a served object, or 400 if it cannot be converted.
fn stored_form(definition: &ResourceDefinition, object: Value) -> Result<Value, ApiError> {
    definition.stored_form(object)
}

impl Context<'_> {
    /// The field manager of this endpoint: the kind's schema from the catalog (a typed kind,
    /// compared on create with its zero value; deduced types for kinds it does not have),
    /// the subresource, and the fields the endpoint resets (`status` through a resource
    /// with a status subresource, `spec` through that subresource).
    fn field_manager<'s>(&self, schema: Option<&'s KindSchema>) -> FieldManager<SchemaRef<'s>> {
        let definition = self.definition();
        let group_version = &definition.group_version;
        let subresource = self.subresource.as_ref().map_or("", |sub| sub.name);
        let resets: &[&str] = match subresource {
            "" if definition.subresource("status").is_some() => &["status"],
            "status" => &["spec"],
            _ => &[],
        };
        let api_version = group_version.api_version();
        let typed = schema.is_some_and(KindSchema::is_typed);
        let schema = schema.map(KindSchema::schema);
        let manager =
            FieldManager::new(schema, &api_version, &definition.kind, subresource).ignoring(resets);
        if typed { manager.typed() } else { manager }
    }

    /// The manager of a write: `fieldManager`, else the User-Agent's product name.
    fn manager(&self, options: &WriteOptions) -> String {
        kapi_fieldmanager::manager_or_user_agent(&options.field_manager, &self.user_agent)
    }
}

/// The stored object `new`, written through `subresource` (scale) by `manager` over
/// `current`, with its managedFields updated as upstream's subresource handlers record such
/// writes: an Update by the manager, of that subresource, owning what changed.
pub(super) fn track_subresource_update(
    apis: &Apis,
    definition: &ResourceDefinition,
    subresource: &str,
    manager: &str,
    current: &Value,
    new: Value,
) -> Result<Value, ApiError> {
    let gv = &definition.group_version;
    let schema = apis
        .schemas
        .as_ref()
        .and_then(|schemas| schemas.kind_schema(&gv.group, &gv.version, &definition.kind));
    let typed = schema.as_ref().is_some_and(KindSchema::is_typed);
    let field_manager = FieldManager::new(
        schema.as_ref().map(KindSchema::schema),
        &gv.api_version(),
        &definition.kind,
        subresource,
    );
    let field_manager = if typed {
        field_manager.typed()
    } else {
        field_manager
    };
    track_update(definition, &field_manager, manager, Some(current), new)
}

/// `new` (stored form) with its managedFields updated for a write over `current` (`None`
/// for a create), computed on the served forms as upstream computes them in the request's
/// version.
fn track_update(
    definition: &ResourceDefinition,
    field_manager: &FieldManager<SchemaRef<'_>>,
    manager: &str,
    current: Option<&Value>,
    new: Value,
) -> Result<Value, ApiError> {
    let live = current
        .map(|current| definition.served_form(current.clone()))
        .transpose()?;
    let mut served = definition.served_form(new)?;
    field_manager.update(live.as_ref(), &mut served, manager, &meta::now_rfc3339());
    stored_form(definition, served)
}

async fn create(context: &Context<'_>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let dry_run = params::dry_run(&context.query, "CreateOptions")?;
    let options =
        params::write_options(&context.query, "CreateOptions", WriteKind::CreateOrUpdate)?;
    let definition = context.definition();
    let mut served = decode_object(context, &body)?;
    definition
        .strategy
        .set_requester(&mut served, &context.user);
    let manager = context.manager(&options);
    let schema = context.kind_schema();
    context.field_manager(schema.as_ref()).update(
        None,
        &mut served,
        &manager,
        &meta::now_rfc3339(),
    );
    let object = stored_form(definition, served)?;
    let admission = context.admission("");
    let write = Write {
        dry_run,
        admission: Some(&admission),
        ..Write::default()
    };
    let created = context
        .served
        .registry
        .create(definition, &context.namespace, object, write)
        .await?;
    context.respond_object(StatusCode::CREATED, definition.served_form(created)?)
}

/// Checks that the body's name is the URL's, as upstream's checkName. (A different namespace
/// is rejected by the registry, with upstream's wording.)
fn check_name(context: &Context<'_>, object: &Value) -> Result<(), ApiError> {
    let (name, url_name) = (object::name(object), context.info.name.as_str());
    if name != url_name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        )));
    }
    Ok(())
}

async fn update(context: &Context<'_>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let dry_run = params::dry_run(&context.query, "UpdateOptions")?;
    let options =
        params::write_options(&context.query, "UpdateOptions", WriteKind::CreateOrUpdate)?;
    let schema = context.kind_schema();
    let field_manager = context.field_manager(schema.as_ref());
    let manager = context.manager(&options);
    let definition = context.definition();
    let provided = decode_object(context, &body)?;
    check_name(context, &provided)?;
    let provided = stored_form(definition, provided)?;
    let name = context.info.name.clone();
    let subresource = context.subresource.clone();
    let admission = context.admission(&name);
    let write = Write {
        subresource: subresource.as_ref().map(|sub| &sub.kind),
        dry_run,
        admission: Some(&admission),
        manager: None,
    };
    let (object, created) = context
        .served
        .registry
        .update(definition, &context.namespace, &name, write, |current| {
            let new = match current {
                Some(current) => {
                    written(definition, subresource.as_ref(), current, provided.clone())
                }
                None => {
                    let mut new = provided.clone();
                    definition.strategy.set_requester(&mut new, &context.user);
                    new
                }
            };
            track_update(definition, &field_manager, &manager, current, new)
        })
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    context.respond_object(status, definition.served_form(object)?)
}

/// What a write of `new` through the resource or one of its subresources changes of
/// `current`: a status write changes only the status, a finalize write only the finalizers,
/// and a write of the resource itself keeps the status when the resource has a status
/// subresource. The written object's resourceVersion is kept as the precondition.
fn written(
    definition: &ResourceDefinition,
    subresource: Option<&Subresource>,
    current: &Value,
    new: Value,
) -> Value {
    let carry = |mut base: Value, pointer: &str, from: &Value| {
        let value = from.pointer(pointer).cloned();
        let (parent, field) = pointer.rsplit_once('/').unwrap_or(("", pointer));
        if let Some(target) = base.pointer_mut(parent).and_then(Value::as_object_mut) {
            match value {
                Some(value) => target.insert(field.to_string(), value),
                None => target.remove(field),
            };
        }
        base
    };
    let with_version = |mut object: Value, from: &Value| {
        let version = object::resource_version(from).to_string();
        object::set_meta(&mut object, "resourceVersion", Value::from(version));
        object
    };
    match subresource.map(|sub| &sub.kind) {
        Some(SubresourceKind::Status) => {
            with_version(carry(current.clone(), "/status", &new), &new)
        }
        Some(SubresourceKind::Finalize) => {
            let mut base = current.clone();
            if base.get("spec").is_none() {
                base["spec"] = json!({});
            }
            with_version(carry(base, "/spec/finalizers", &new), &new)
        }
        Some(SubresourceKind::Part(part)) => with_version((part.merge)(current, &new), &new),
        // Served by endpoints::subresource, never written through here.
        Some(
            SubresourceKind::Scale(_) | SubresourceKind::Create(_) | SubresourceKind::Connect(_),
        ) => new,
        None if definition.subresource("status").is_some() => carry(new, "/status", current),
        None => new,
    }
}

async fn patch(context: &Context<'_>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let dry_run = params::dry_run(&context.query, "PatchOptions")?;
    let content_type = context.content_type.as_deref().unwrap_or_default();
    if negotiation::essence(content_type) == APPLY_PATCH {
        return apply(context, &body, dry_run).await;
    }
    let options = params::write_options(&context.query, "PatchOptions", WriteKind::Patch)?;
    let schema = context.kind_schema();
    let field_manager = context.field_manager(schema.as_ref());
    let manager = context.manager(&options);
    let patch_type = patch_type(context.definition(), content_type)?;
    kapi_patch::validate_body(&body).map_err(|err| patch_error(&err))?;
    let definition = context.definition();
    let name = context.info.name.clone();
    let resource = definition.group_resource();
    let subresource = context.subresource.clone();
    let schema = patch_schema(context);
    let admission = context.admission(&name);
    let write = Write {
        subresource: subresource.as_ref().map(|sub| &sub.kind),
        dry_run,
        admission: Some(&admission),
        manager: None,
    };
    let (object, _) = context
        .served
        .registry
        .update(definition, &context.namespace, &name, write, |current| {
            let current = current.ok_or_else(|| ApiError::not_found(&resource, &name))?;
            let served = definition.served_form(current.clone())?;
            let patched = kapi_patch::apply(patch_type, &served, &body, &schema)
                .map_err(|err| patch_error(&err))?;
            let patched = patched_object(context, patch_type, patched)?;
            check_name(context, &patched)?;
            let mut patched = decode_patched(context, patch_type, &body, patched)?;
            definition.strategy.default(&mut patched);
            let patched = stored_form(definition, patched)?;
            let new = written(definition, subresource.as_ref(), current, patched);
            track_update(definition, &field_manager, &manager, Some(current), new)
        })
        .await?;
    context.respond_object(StatusCode::OK, definition.served_form(object)?)
}

/// The patched object in the endpoint's version, its type resolved as upstream's decoding
/// resolves it (see [`decoded_type`]).
fn patched_object(
    context: &Context<'_>,
    patch_type: PatchType,
    patched: Value,
) -> Result<Value, ApiError> {
    let definition = context.definition();
    let directive = super::decode::directive(&context.query, "PatchOptions")?;
    let warn = |warnings| context.warn(warnings);
    let resolved = decoded_type::resolve_patched(
        definition,
        context.apis,
        patch_type,
        directive,
        &context.info.name,
        patched,
        &warn,
    )?;
    match resolved {
        PatchedType::Same(patched) => Ok(patched),
        PatchedType::OtherVersion(patched, other) => {
            definition.served_form(other.stored_form(patched)?)
        }
    }
}

/// The patch type of a PATCH's content type, or the 415 refusing it: built-in resources'
/// patch routes consume only the patch types (the router's own 415); the CRD handler names
/// the types custom resources accept (no strategic merge patch: no patch strategies).
pub(super) fn patch_type(
    definition: &ResourceDefinition,
    content_type: &str,
) -> Result<PatchType, ApiError> {
    let merge_patch_types = || {
        ApiError::unsupported_media_type([
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ])
    };
    match PatchType::from_content_type(content_type) {
        Some(PatchType::StrategicMerge) if !definition.capabilities.strategic_merge_patch => {
            Err(merge_patch_types())
        }
        Some(patch_type) => Ok(patch_type),
        None if definition.capabilities.dynamic => Err(merge_patch_types()),
        None => Err(router_error(
            415,
            "UnsupportedMediaType",
            "415: Unsupported Media Type",
        )),
    }
}

/// The media type of server-side apply patches.
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// How many times an apply alternates between updating and creating while another writer
/// creates or deletes the object meanwhile.
const APPLY_ATTEMPTS: usize = 3;

/// An apply patch body: a YAML (or JSON) object; `null` is an empty one, as upstream's
/// decoding into a Go map leaves it.
fn decode_apply_config(body: &[u8]) -> Result<Value, ApiError> {
    let config: Value = serde_yaml_ng::from_slice(body)
        .map_err(|err| ApiError::bad_request(format!("error decoding YAML: {err}")))?;
    let json_type = match config {
        Value::Object(_) => return Ok(config),
        Value::Null => return Ok(json!({})),
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
    };
    Err(ApiError::bad_request(format!(
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot \
         unmarshal {json_type} into Go value of type map[string]interface {{}}"
    )))
}

/// A server-side apply patch: the YAML (or JSON) configuration is merged into the object by
/// its schema, with conflicts against other managers' fields (unless `force=true`); a
/// missing object is created from it (201).
async fn apply(
    context: &Context<'_>,
    body: &[u8],
    dry_run: bool,
) -> Result<Response<Body>, ApiError> {
    let options = params::write_options(&context.query, "PatchOptions", WriteKind::Apply)?;
    let config = decode_apply_config(body)?;
    let definition = context.definition();
    let name = context.info.name.clone();
    let schema = context.kind_schema();
    let field_manager = context.field_manager(schema.as_ref());
    let subresource = context.subresource.clone();
    let admission = context.admission(&name);
    let write = Write {
        subresource: subresource.as_ref().map(|sub| &sub.kind),
        dry_run,
        admission: Some(&admission),
        manager: None,
    };
    let resource = definition.group_resource();
    let apply_to = |live: Option<&Value>| -> Result<Value, ApiError> {
        let now = meta::now_rfc3339();
        let (manager, force) = (&options.field_manager, options.force);
        let mut applied = field_manager.apply(live, &config, manager, force, &now)?;
        definition.strategy.default(&mut applied);
        check_name(context, &applied)?;
        stored_form(definition, applied)
    };
    for _ in 0..APPLY_ATTEMPTS {
        let updated = context
            .served
            .registry
            .update(definition, &context.namespace, &name, write, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(&resource, &name))?;
                let live = definition.served_form(current.clone())?;
                let applied = apply_to(Some(&live))?;
                let managed = applied["metadata"]["managedFields"].clone();
                let mut object = written(definition, subresource.as_ref(), current, applied);
                // A subresource's apply keeps only its part of the object, but the applier's
                // ownership is recorded all the same (upstream's status strategies keep the
                // field manager's managedFields).
                if subresource.is_some() && !managed.is_null() {
                    object["metadata"]["managedFields"] = managed;
                }
                Ok(object)
            })
            .await;
        match updated {
            Ok((object, _)) => {
                return context.respond_object(StatusCode::OK, definition.served_form(object)?);
            }
            Err(err) if err.is_not_found() && subresource.is_none() => {}
            Err(err) => return Err(err),
        }
        let mut object = apply_to(None)?;
        definition
            .strategy
            .set_requester(&mut object, &context.user);
        let created = context
            .served
            .registry
            .create(definition, &context.namespace, object, write)
            .await;
        match created {
            Ok(created) => {
                return context
                    .respond_object(StatusCode::CREATED, definition.served_form(created)?);
            }
            Err(err) if err.is_already_exists() => continue,
            Err(err) => return Err(err),
        }
    }
    Err(ApiError::conflict(
        &resource,
        &name,
        "the object was created and deleted concurrently; please retry",
    ))
}

/// The list and map semantics strategic merge patch uses for a resource: its kind's schema
/// (`x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`), or ObjectMeta's
/// alone for a kind the server has no schema for.
fn patch_schema(context: &Context<'_>) -> Box<dyn kapi_patch::PatchSchema + Send + Sync> {
    match context.kind_schema() {
        Some(schema) => Box::new(schema),
        None => Box::new(kapi_patch::MetadataSchema),
    }
}

/// Decodes a patched object against its kind's schema, per the request's
/// `fieldValidation` (unknown fields dropped, warned about or refused).
fn decode_patched(
    context: &Context<'_>,
    patch_type: PatchType,
    patch: &[u8],
    mut patched: Value,
) -> Result<Value, ApiError> {
    let Some(schema) = context.kind_schema() else {
        return Ok(patched);
    };
    let directive = super::decode::directive(&context.query, "PatchOptions")?;
    let warnings =
        super::decode::decode_patched(&schema, patch_type, patch, &mut patched, directive)?;
    context.warn(warnings);
    Ok(patched)
}

/// The API error of a failed patch, as upstream's patch handler answers it.
pub(super) fn patch_error(err: &kapi_patch::PatchError) -> ApiError {
    let mut status = Status::failure(err.status_code(), err.reason(), err.message());
    if err.has_details() {
        let causes = err
            .causes()
            .into_iter()
            .map(|cause| StatusCause {
                reason: cause.reason.to_string(),
                message: cause.message,
                field: cause.field.to_string(),
            })
            .collect();
        status = status.with_details(StatusDetails {
            causes,
            ..Default::default()
        });
    }
    ApiError::from(status)
}

async fn delete(context: &Context<'_>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let params = params::delete_params(
        &context.query,
        context.apis.schemas(),
        context.content_type.as_deref(),
        &body,
    )?;
    let definition = context.definition();
    let name = context.info.name.clone();
    let mut admission = context.admission(&name);
    // A dry run may be asked in the DeleteOptions body too.
    admission.attributes.dry_run |= params.dry_run;
    admission.attributes.options = &params.options;
    if let Some(reason) = definition.strategy.undeletable(&name) {
        return Err(ApiError::forbidden(
            &definition.group_resource(),
            &name,
            reason,
        ));
    }
    let outcome = context
        .served
        .registry
        .delete(
            definition,
            &context.namespace,
            &name,
            &params,
            Some(&admission),
        )
        .await?;
    match outcome {
        DeleteOutcome::Deleted(object) if !definition.strategy.return_deleted_object() => {
            let details = StatusDetails {
                name: name.clone(),
                group: definition.group_version.group.clone(),
                kind: definition.plural.to_string(),
                uid: object::uid(&object).to_string(),
                ..Default::default()
            };
            let status = Status::success().with_details(details);
            let body = serde_json::to_vec(&status).map_err(ApiError::internal)?;
            Ok(response(StatusCode::OK, "application/json", body))
        }
        DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object) => {
            context.respond_object(StatusCode::OK, definition.served_form(object)?)
        }
    }
}

/// How many deletes of a deletecollection run at once.
const DELETE_COLLECTION_WORKERS: usize = 32;

async fn delete_collection(context: &Context<'_>, body: Bytes) -> Result<Response<Body>, ApiError> {
    let delete_params = params::delete_params(
        &context.query,
        context.apis.schemas(),
        context.content_type.as_deref(),
        &body,
    )?;
    let definition = context.definition();
    let namespace = Some(context.namespace.as_str()).filter(|ns| !ns.is_empty());
    let mut list_params = params::list_params(&context.query, definition, namespace, false)?;
    list_params.limit = None;
    list_params.continue_token = None;
    list_params.version = ReadVersion::MostRecent;
    let registry = &context.served.registry;
    let resource = definition.group_resource();
    let listed = registry.list(&resource, &list_params).await?;
    // Items are deleted concurrently, as upstream's deletecollection workers do; the store
    // commits concurrent deletes together.
    let delete_one = |item: &crate::registry::Item| {
        let delete_params = &delete_params;
        let decoded = item.decode();
        async move {
            let object = decoded?;
            let (ns, name) = (object::namespace(&object), object::name(&object));
            let mut admission = context.admission(name);
            admission.attributes.dry_run |= delete_params.dry_run;
            admission.attributes.options = &delete_params.options;
            let deleted = registry
                .delete(definition, ns, name, delete_params, Some(&admission))
                .await;
            match deleted {
                Ok(DeleteOutcome::Deleted(object) | DeleteOutcome::Pending(object)) => {
                    Ok(Some(definition.served_form(object)?))
                }
                Err(err) if err.code() == 404 => Ok(None),
                Err(err) => Err(err),
            }
        }
    };
    let outcomes: Vec<Result<Option<Value>, ApiError>> =
        futures::stream::iter(listed.items.iter().map(delete_one))
            .buffered(DELETE_COLLECTION_WORKERS)
            .collect()
            .await;
    let mut deleted = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        deleted.extend(outcome?);
    }
    let list = json!({
        "kind": definition.list_kind,
        "apiVersion": definition.group_version.api_version(),
        "metadata": { "resourceVersion": listed.revision.to_string() },
        "items": deleted,
    });
    let body = serde_json::to_vec(&list).map_err(ApiError::internal)?;
    Ok(response(StatusCode::OK, "application/json", body))
}
