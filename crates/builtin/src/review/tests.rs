use kapi_server::authn::ALL_AUTHENTICATED;
use kapi_server::authz::AuthenticatedAuthorizer;
use kapi_server::endpoints::Served;
use kapi_server::resource::Api;

use super::*;
use crate::token::tests::tokens;

/// What the creaters reach in these tests: services only, no other resources.
struct Services(http::Extensions);

impl Api for Services {
    fn resource(&self, _group: &str, _resource: &str) -> Option<Served> {
        None
    }

    fn services(&self) -> &http::Extensions {
        &self.0
    }
}

fn services() -> Services {
    let mut extensions = http::Extensions::new();
    extensions.insert::<Arc<dyn Authorizer>>(Arc::new(AuthenticatedAuthorizer));
    extensions.insert(Arc::new(tokens()));
    Services(extensions)
}

fn alice() -> UserInfo {
    UserInfo {
        name: "alice".into(),
        uid: "a1".into(),
        groups: vec!["dev".into(), ALL_AUTHENTICATED.into()],
        extra: BTreeMap::from([("scopes".to_string(), vec!["x".to_string()])]),
    }
}

async fn create(
    creater: &dyn Creater,
    user: &UserInfo,
    namespace: &str,
    object: Value,
) -> Result<Value, ApiError> {
    let api = services();
    let request = CreateRequest {
        user,
        namespace,
        name: "",
        object,
        dry_run: false,
        api: &api,
    };
    creater.create(request).await
}

#[tokio::test]
async fn self_subject_review_shows_the_requester() {
    let review = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let answer = create(&SelfSubjectReviewCreater, &alice(), "", review)
        .await
        .unwrap();
    assert_eq!(answer["kind"], "SelfSubjectReview");
    assert_eq!(answer["apiVersion"], "authentication.k8s.io/v1");
    assert!(answer["metadata"]["creationTimestamp"].is_string());
    assert_eq!(
        answer["status"]["userInfo"],
        json!({"username": "alice", "uid": "a1", "groups": ["dev", "system:authenticated"], "extra": {"scopes": ["x"]}})
    );
}

#[tokio::test]
async fn access_reviews_ask_the_servers_authorizer() {
    let ssar = |attributes: Value| json!({"spec": attributes});
    let pods =
        json!({"resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "ns"}});
    let cases = [
        (
            AccessReviewCreater::SelfSubject,
            alice(),
            ssar(pods.clone()),
            json!({"allowed": true}),
        ),
        (
            AccessReviewCreater::SelfSubject,
            UserInfo::anonymous(),
            ssar(pods.clone()),
            json!({"allowed": false}),
        ),
        (
            AccessReviewCreater::Subject,
            alice(),
            json!({"spec": {"user": "system:anonymous", "nonResourceAttributes": {"verb": "get", "path": "/healthz"}}}),
            json!({"allowed": true}),
        ),
        (
            AccessReviewCreater::Subject,
            alice(),
            json!({"spec": {"user": "bob", "resourceAttributes": {"verb": "get", "resource": "pods"}}}),
            json!({"allowed": true}),
        ),
        (
            AccessReviewCreater::Local,
            alice(),
            json!({"metadata": {"namespace": "ns"},
                "spec": {"groups": ["system:unauthenticated"], "resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "ns"}}}),
            json!({"allowed": false}),
        ),
    ];
    for (creater, user, review, status) in cases {
        let answer = create(&creater, &user, "ns", review.clone()).await.unwrap();
        assert_eq!(answer["status"], status, "{creater:?} {review}");
        assert_eq!(answer["spec"], review["spec"]);
        assert!(
            answer["metadata"].get("creationTimestamp").is_none(),
            "{answer}"
        );
    }
}

#[tokio::test]
async fn access_reviews_are_validated_as_upstream() {
    let both = json!({"resourceAttributes": {}, "nonResourceAttributes": {}, "user": "u"});
    let cases = [
        (
            AccessReviewCreater::Subject,
            json!({"user": "u"}),
            r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of nonResourceAttributes or resourceAttributes must be specified"#,
        ),
        (
            AccessReviewCreater::Subject,
            json!({"resourceAttributes": {}}),
            r#"SubjectAccessReview.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be specified"#,
        ),
        (
            AccessReviewCreater::SelfSubject,
            both.clone(),
            r#"SelfSubjectAccessReview.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {}: cannot be specified in combination with resourceAttributes"#,
        ),
        (
            AccessReviewCreater::Local,
            both,
            r#"LocalSubjectAccessReview.authorization.k8s.io "" is invalid: [spec.nonResourceAttributes: Invalid value: {}: cannot be specified in combination with resourceAttributes, spec.resourceAttributes.namespace: Invalid value: "": must match metadata.namespace, spec.nonResourceAttributes: Invalid value: {}: disallowed on this kind of request]"#,
        ),
        (
            AccessReviewCreater::Local,
            json!({"user": "u", "resourceAttributes": {"namespace": "other"}}),
            r#"LocalSubjectAccessReview.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace"#,
        ),
        (
            AccessReviewCreater::Subject,
            json!({"user": "u", "resourceAttributes": {
                "fieldSelector": {"rawSelector": "a=b", "requirements": [{"key": "a", "operator": "In"}]},
                "labelSelector": {}}}),
            "SubjectAccessReview.authorization.k8s.io \"\" is invalid: [\
             spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: \"a=b\": may not specified at the same time as requirements, \
             spec.resourceAttributes.fieldSelector.requirements[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn', \
             spec.resourceAttributes.labelSelector.requirements: Required value: when spec.resourceAttributes.labelSelector is specified, requirements or rawSelector is required]",
        ),
    ];
    for (creater, spec, message) in cases {
        let mut review = json!({ "spec": spec });
        if creater == AccessReviewCreater::Local {
            // The create handler gives the review the request's namespace.
            review["metadata"] = json!({"namespace": "ns"});
        }
        let err = create(&creater, &alice(), "ns", review).await.unwrap_err();
        assert_eq!(err.message(), message);
    }
    // Only a LocalSubjectAccessReview's namespace may be set in its metadata.
    let named = json!({"metadata": {"name": "x", "creationTimestamp": null},
        "spec": {"user": "u", "nonResourceAttributes": {"path": "/", "verb": "get"}}});
    let err = create(&AccessReviewCreater::Subject, &alice(), "", named)
        .await
        .unwrap_err();
    assert_eq!(
        err.message(),
        r#"SubjectAccessReview.authorization.k8s.io "" is invalid: metadata: Invalid value: {"name":"x"}: must be empty"#
    );
}

#[tokio::test]
async fn rules_reviews_list_what_the_authorizer_grants() {
    let review = json!({"spec": {"namespace": "ns"}});
    let everything = create(&RulesReviewCreater, &alice(), "", review.clone())
        .await
        .unwrap();
    assert_eq!(
        everything["status"],
        json!({
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": false,
        })
    );
    let nothing = create(&RulesReviewCreater, &UserInfo::anonymous(), "", review)
        .await
        .unwrap();
    assert_eq!(
        nothing["status"],
        json!({
            "resourceRules": [],
            "nonResourceRules": [{
                "verbs": ["get"],
                "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"],
            }],
            "incomplete": false,
        })
    );
}

/// A token authenticator knowing `agnostic` (for any audience, as the token file) and
/// `aware` (for the audience `api` only, as service-account tokens).
struct Tokens;

#[async_trait::async_trait]
impl kapi_server::authn::TokenAuthenticator for Tokens {
    async fn authenticate_token(
        &self,
        token: &str,
    ) -> Result<Option<UserInfo>, kapi_server::authn::AuthenticationError> {
        let user = || UserInfo {
            name: token.into(),
            ..UserInfo::default()
        };
        match token {
            "agnostic" => Ok(Some(user())),
            "aware" => {
                let wanted = kapi_server::authn::reviewed_audiences().unwrap_or_default();
                if !wanted.iter().any(|a| a == "api") {
                    let err = "token audiences [\"api\"] is invalid for the target audiences";
                    return Err(kapi_server::authn::AuthenticationError(err.into()));
                }
                kapi_server::authn::grant_audiences(vec!["api".into()]);
                Ok(Some(user()))
            }
            _ => Ok(None),
        }
    }
}

async fn token_review(api: &Services, token: &str, audiences: Value) -> Result<Value, ApiError> {
    let object = json!({"spec": {"token": token, "audiences": audiences}});
    let nobody = UserInfo::default();
    let request = CreateRequest {
        user: &nobody,
        namespace: "",
        name: "",
        object,
        dry_run: false,
        api,
    };
    TokenReviewCreater.create(request).await
}

#[tokio::test]
async fn token_reviews_ask_the_servers_authenticators() {
    let mut api = services();
    let bearer = kapi_server::authn::BearerToken::new(vec![Arc::new(Tokens)]);
    let authentication = Authentication::new(vec![Arc::new(bearer)], true);
    api.0.insert(Arc::new(authentication));
    let api_audience = crate::token::DEFAULT_ISSUER;
    let answer = token_review(&api, "agnostic", Value::Null).await.unwrap();
    assert_eq!(
        answer["status"],
        json!({"authenticated": true,
            "user": {"username": "agnostic", "groups": ["system:authenticated"]},
            "audiences": [api_audience]})
    );
    // An audience-agnostic token is good for the API audiences only.
    let answer = token_review(&api, "agnostic", json!(["other"]))
        .await
        .unwrap();
    assert_eq!(
        answer["status"],
        json!({"user": {}, "error": "invalid bearer token"})
    );
    let answer = token_review(&api, "aware", json!(["api", "other"]))
        .await
        .unwrap();
    assert_eq!(answer["status"]["audiences"], json!(["api"]));
    let answer = token_review(&api, "aware", Value::Null).await.unwrap();
    assert_eq!(
        answer["status"]["error"],
        "token audiences [\"api\"] is invalid for the target audiences"
    );
    let answer = token_review(&api, "x.y.z", Value::Null).await.unwrap();
    assert_eq!(
        answer["status"],
        json!({"user": {}, "error": "invalid bearer token"})
    );
    let err = token_review(&api, "", Value::Null).await.unwrap_err();
    assert_eq!(
        (err.code(), err.message()),
        (400, "token is required for TokenReview in authentication")
    );
}
