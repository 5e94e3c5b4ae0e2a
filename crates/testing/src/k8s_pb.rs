//! Kubernetes' own protobuf messages, as the k8s-pb crate generates them from upstream's
//! `.proto` files: an implementation of the wire format independent of kapi's, which tests
//! read kapi's protobuf with.

use prost::Message;

/// Decodes `raw` with k8s-pb's message `M` and encodes it again.
fn check<M: Message + Default>(raw: &[u8]) -> Result<Vec<u8>, prost::DecodeError> {
    M::decode(raw).map(|m| m.encode_to_vec())
}

/// `raw`, a message of kapi's protobuf table named `name` (`core/v1.Pod`), decoded with
/// the k8s-pb message of the same name and encoded again.
pub fn reencode(name: &str, raw: &[u8]) -> Result<Vec<u8>, prost::DecodeError> {
    match name {
        "admissionregistration/v1.MutatingWebhookConfiguration" => {
            check::<k8s_pb::api::admissionregistration::v1::MutatingWebhookConfiguration>(raw)
        }
        "admissionregistration/v1.MutatingWebhookConfigurationList" => {
            check::<k8s_pb::api::admissionregistration::v1::MutatingWebhookConfigurationList>(raw)
        }
        "admissionregistration/v1.ValidatingAdmissionPolicy" => {
            check::<k8s_pb::api::admissionregistration::v1::ValidatingAdmissionPolicy>(raw)
        }
        "admissionregistration/v1.ValidatingAdmissionPolicyBinding" => {
            check::<k8s_pb::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(raw)
        }
        "admissionregistration/v1.ValidatingAdmissionPolicyBindingList" => check::<
            k8s_pb::api::admissionregistration::v1::ValidatingAdmissionPolicyBindingList,
        >(raw),
        "admissionregistration/v1.ValidatingAdmissionPolicyList" => {
            check::<k8s_pb::api::admissionregistration::v1::ValidatingAdmissionPolicyList>(raw)
        }
        "admissionregistration/v1.ValidatingWebhookConfiguration" => {
            check::<k8s_pb::api::admissionregistration::v1::ValidatingWebhookConfiguration>(raw)
        }
        "admissionregistration/v1.ValidatingWebhookConfigurationList" => {
            check::<k8s_pb::api::admissionregistration::v1::ValidatingWebhookConfigurationList>(raw)
        }
        "apidiscovery/v2.APIGroupDiscoveryList" => {
            check::<k8s_pb::api::apidiscovery::v2::APIGroupDiscoveryList>(raw)
        }
        "apidiscovery/v2beta1.APIGroupDiscoveryList" => {
            check::<k8s_pb::api::apidiscovery::v2beta1::APIGroupDiscoveryList>(raw)
        }
        "apiextensions/v1.CustomResourceDefinition" => check::<k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(raw),
        "apiextensions/v1.CustomResourceDefinitionList" => check::<k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionList>(raw),
        "apiregistration/v1.APIService" => check::<k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1::APIService>(raw),
        "apiregistration/v1.APIServiceList" => check::<k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1::APIServiceList>(raw),
        "apps/v1.ControllerRevision" => check::<k8s_pb::api::apps::v1::ControllerRevision>(raw),
        "apps/v1.ControllerRevisionList" => {
            check::<k8s_pb::api::apps::v1::ControllerRevisionList>(raw)
        }
        "apps/v1.DaemonSet" => check::<k8s_pb::api::apps::v1::DaemonSet>(raw),
        "apps/v1.DaemonSetList" => check::<k8s_pb::api::apps::v1::DaemonSetList>(raw),
        "apps/v1.Deployment" => check::<k8s_pb::api::apps::v1::Deployment>(raw),
        "apps/v1.DeploymentList" => check::<k8s_pb::api::apps::v1::DeploymentList>(raw),
        "apps/v1.ReplicaSet" => check::<k8s_pb::api::apps::v1::ReplicaSet>(raw),
        "apps/v1.ReplicaSetList" => check::<k8s_pb::api::apps::v1::ReplicaSetList>(raw),
        "apps/v1.StatefulSet" => check::<k8s_pb::api::apps::v1::StatefulSet>(raw),
        "apps/v1.StatefulSetList" => check::<k8s_pb::api::apps::v1::StatefulSetList>(raw),
        "authentication/v1.SelfSubjectReview" => {
            check::<k8s_pb::api::authentication::v1::SelfSubjectReview>(raw)
        }
        "authentication/v1.TokenRequest" => {
            check::<k8s_pb::api::authentication::v1::TokenRequest>(raw)
        }
        "authentication/v1.TokenReview" => {
            check::<k8s_pb::api::authentication::v1::TokenReview>(raw)
        }
        "authorization/v1.LocalSubjectAccessReview" => {
            check::<k8s_pb::api::authorization::v1::LocalSubjectAccessReview>(raw)
        }
        "authorization/v1.SelfSubjectAccessReview" => {
            check::<k8s_pb::api::authorization::v1::SelfSubjectAccessReview>(raw)
        }
        "authorization/v1.SelfSubjectRulesReview" => {
            check::<k8s_pb::api::authorization::v1::SelfSubjectRulesReview>(raw)
        }
        "authorization/v1.SubjectAccessReview" => {
            check::<k8s_pb::api::authorization::v1::SubjectAccessReview>(raw)
        }
        "autoscaling/v1.HorizontalPodAutoscaler" => {
            check::<k8s_pb::api::autoscaling::v1::HorizontalPodAutoscaler>(raw)
        }
        "autoscaling/v1.HorizontalPodAutoscalerList" => {
            check::<k8s_pb::api::autoscaling::v1::HorizontalPodAutoscalerList>(raw)
        }
        "autoscaling/v1.Scale" => check::<k8s_pb::api::autoscaling::v1::Scale>(raw),
        "autoscaling/v2.HorizontalPodAutoscaler" => {
            check::<k8s_pb::api::autoscaling::v2::HorizontalPodAutoscaler>(raw)
        }
        "autoscaling/v2.HorizontalPodAutoscalerList" => {
            check::<k8s_pb::api::autoscaling::v2::HorizontalPodAutoscalerList>(raw)
        }
        "batch/v1.CronJob" => check::<k8s_pb::api::batch::v1::CronJob>(raw),
        "batch/v1.CronJobList" => check::<k8s_pb::api::batch::v1::CronJobList>(raw),
        "batch/v1.Job" => check::<k8s_pb::api::batch::v1::Job>(raw),
        "batch/v1.JobList" => check::<k8s_pb::api::batch::v1::JobList>(raw),
        "certificates/v1.CertificateSigningRequest" => {
            check::<k8s_pb::api::certificates::v1::CertificateSigningRequest>(raw)
        }
        "certificates/v1.CertificateSigningRequestList" => {
            check::<k8s_pb::api::certificates::v1::CertificateSigningRequestList>(raw)
        }
        "coordination/v1.Lease" => check::<k8s_pb::api::coordination::v1::Lease>(raw),
        "coordination/v1.LeaseList" => check::<k8s_pb::api::coordination::v1::LeaseList>(raw),
        "core/v1.Binding" => check::<k8s_pb::api::core::v1::Binding>(raw),
        "core/v1.ComponentStatus" => check::<k8s_pb::api::core::v1::ComponentStatus>(raw),
        "core/v1.ComponentStatusList" => check::<k8s_pb::api::core::v1::ComponentStatusList>(raw),
        "core/v1.ConfigMap" => check::<k8s_pb::api::core::v1::ConfigMap>(raw),
        "core/v1.ConfigMapList" => check::<k8s_pb::api::core::v1::ConfigMapList>(raw),
        "core/v1.Endpoints" => check::<k8s_pb::api::core::v1::Endpoints>(raw),
        "core/v1.EndpointsList" => check::<k8s_pb::api::core::v1::EndpointsList>(raw),
        "core/v1.Event" => check::<k8s_pb::api::core::v1::Event>(raw),
        "core/v1.EventList" => check::<k8s_pb::api::core::v1::EventList>(raw),
        "core/v1.LimitRange" => check::<k8s_pb::api::core::v1::LimitRange>(raw),
        "core/v1.LimitRangeList" => check::<k8s_pb::api::core::v1::LimitRangeList>(raw),
        "core/v1.Namespace" => check::<k8s_pb::api::core::v1::Namespace>(raw),
        "core/v1.NamespaceList" => check::<k8s_pb::api::core::v1::NamespaceList>(raw),
        "core/v1.Node" => check::<k8s_pb::api::core::v1::Node>(raw),
        "core/v1.NodeList" => check::<k8s_pb::api::core::v1::NodeList>(raw),
        "core/v1.PersistentVolume" => check::<k8s_pb::api::core::v1::PersistentVolume>(raw),
        "core/v1.PersistentVolumeClaim" => {
            check::<k8s_pb::api::core::v1::PersistentVolumeClaim>(raw)
        }
        "core/v1.PersistentVolumeClaimList" => {
            check::<k8s_pb::api::core::v1::PersistentVolumeClaimList>(raw)
        }
        "core/v1.PersistentVolumeList" => check::<k8s_pb::api::core::v1::PersistentVolumeList>(raw),
        "core/v1.Pod" => check::<k8s_pb::api::core::v1::Pod>(raw),
        "core/v1.PodList" => check::<k8s_pb::api::core::v1::PodList>(raw),
        "core/v1.PodTemplate" => check::<k8s_pb::api::core::v1::PodTemplate>(raw),
        "core/v1.PodTemplateList" => check::<k8s_pb::api::core::v1::PodTemplateList>(raw),
        "core/v1.RangeAllocation" => check::<k8s_pb::api::core::v1::RangeAllocation>(raw),
        "core/v1.ReplicationController" => {
            check::<k8s_pb::api::core::v1::ReplicationController>(raw)
        }
        "core/v1.ReplicationControllerList" => {
            check::<k8s_pb::api::core::v1::ReplicationControllerList>(raw)
        }
        "core/v1.ResourceQuota" => check::<k8s_pb::api::core::v1::ResourceQuota>(raw),
        "core/v1.ResourceQuotaList" => check::<k8s_pb::api::core::v1::ResourceQuotaList>(raw),
        "core/v1.Secret" => check::<k8s_pb::api::core::v1::Secret>(raw),
        "core/v1.SecretList" => check::<k8s_pb::api::core::v1::SecretList>(raw),
        "core/v1.Service" => check::<k8s_pb::api::core::v1::Service>(raw),
        "core/v1.ServiceAccount" => check::<k8s_pb::api::core::v1::ServiceAccount>(raw),
        "core/v1.ServiceAccountList" => check::<k8s_pb::api::core::v1::ServiceAccountList>(raw),
        "core/v1.ServiceList" => check::<k8s_pb::api::core::v1::ServiceList>(raw),
        "discovery/v1.EndpointSlice" => check::<k8s_pb::api::discovery::v1::EndpointSlice>(raw),
        "discovery/v1.EndpointSliceList" => {
            check::<k8s_pb::api::discovery::v1::EndpointSliceList>(raw)
        }
        "events/v1.Event" => check::<k8s_pb::api::events::v1::Event>(raw),
        "events/v1.EventList" => check::<k8s_pb::api::events::v1::EventList>(raw),
        "flowcontrol/v1.FlowSchema" => check::<k8s_pb::api::flowcontrol::v1::FlowSchema>(raw),
        "flowcontrol/v1.FlowSchemaList" => {
            check::<k8s_pb::api::flowcontrol::v1::FlowSchemaList>(raw)
        }
        "flowcontrol/v1.PriorityLevelConfiguration" => {
            check::<k8s_pb::api::flowcontrol::v1::PriorityLevelConfiguration>(raw)
        }
        "flowcontrol/v1.PriorityLevelConfigurationList" => {
            check::<k8s_pb::api::flowcontrol::v1::PriorityLevelConfigurationList>(raw)
        }
        "meta/v1.APIGroup" => check::<k8s_pb::apimachinery::pkg::apis::meta::v1::APIGroup>(raw),
        "meta/v1.APIGroupList" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1::APIGroupList>(raw)
        }
        "meta/v1.APIResourceList" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1::APIResourceList>(raw)
        }
        "meta/v1.APIVersions" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1::APIVersions>(raw)
        }
        "meta/v1.DeleteOptions" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1::DeleteOptions>(raw)
        }
        "meta/v1.PartialObjectMetadata" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1::PartialObjectMetadata>(raw)
        }
        "meta/v1.PartialObjectMetadataList" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1::PartialObjectMetadataList>(raw)
        }
        "meta/v1.Status" => check::<k8s_pb::apimachinery::pkg::apis::meta::v1::Status>(raw),
        "meta/v1.WatchEvent" => check::<k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent>(raw),
        "meta/v1beta1.PartialObjectMetadataList" => {
            check::<k8s_pb::apimachinery::pkg::apis::meta::v1beta1::PartialObjectMetadataList>(raw)
        }
        "networking/v1.IPAddress" => check::<k8s_pb::api::networking::v1::IPAddress>(raw),
        "networking/v1.IPAddressList" => check::<k8s_pb::api::networking::v1::IPAddressList>(raw),
        "networking/v1.Ingress" => check::<k8s_pb::api::networking::v1::Ingress>(raw),
        "networking/v1.IngressClass" => check::<k8s_pb::api::networking::v1::IngressClass>(raw),
        "networking/v1.IngressClassList" => {
            check::<k8s_pb::api::networking::v1::IngressClassList>(raw)
        }
        "networking/v1.IngressList" => check::<k8s_pb::api::networking::v1::IngressList>(raw),
        "networking/v1.NetworkPolicy" => check::<k8s_pb::api::networking::v1::NetworkPolicy>(raw),
        "networking/v1.NetworkPolicyList" => {
            check::<k8s_pb::api::networking::v1::NetworkPolicyList>(raw)
        }
        "networking/v1.ServiceCIDR" => check::<k8s_pb::api::networking::v1::ServiceCIDR>(raw),
        "networking/v1.ServiceCIDRList" => {
            check::<k8s_pb::api::networking::v1::ServiceCIDRList>(raw)
        }
        "node/v1.RuntimeClass" => check::<k8s_pb::api::node::v1::RuntimeClass>(raw),
        "node/v1.RuntimeClassList" => check::<k8s_pb::api::node::v1::RuntimeClassList>(raw),
        "policy/v1.Eviction" => check::<k8s_pb::api::policy::v1::Eviction>(raw),
        "policy/v1.PodDisruptionBudget" => {
            check::<k8s_pb::api::policy::v1::PodDisruptionBudget>(raw)
        }
        "policy/v1.PodDisruptionBudgetList" => {
            check::<k8s_pb::api::policy::v1::PodDisruptionBudgetList>(raw)
        }
        "rbac/v1.ClusterRole" => check::<k8s_pb::api::rbac::v1::ClusterRole>(raw),
        "rbac/v1.ClusterRoleBinding" => check::<k8s_pb::api::rbac::v1::ClusterRoleBinding>(raw),
        "rbac/v1.ClusterRoleBindingList" => {
            check::<k8s_pb::api::rbac::v1::ClusterRoleBindingList>(raw)
        }
        "rbac/v1.ClusterRoleList" => check::<k8s_pb::api::rbac::v1::ClusterRoleList>(raw),
        "rbac/v1.Role" => check::<k8s_pb::api::rbac::v1::Role>(raw),
        "rbac/v1.RoleBinding" => check::<k8s_pb::api::rbac::v1::RoleBinding>(raw),
        "rbac/v1.RoleBindingList" => check::<k8s_pb::api::rbac::v1::RoleBindingList>(raw),
        "rbac/v1.RoleList" => check::<k8s_pb::api::rbac::v1::RoleList>(raw),
        "resource/v1.DeviceClass" => check::<k8s_pb::api::resource::v1::DeviceClass>(raw),
        "resource/v1.DeviceClassList" => check::<k8s_pb::api::resource::v1::DeviceClassList>(raw),
        "resource/v1.ResourceClaim" => check::<k8s_pb::api::resource::v1::ResourceClaim>(raw),
        "resource/v1.ResourceClaimList" => {
            check::<k8s_pb::api::resource::v1::ResourceClaimList>(raw)
        }
        "resource/v1.ResourceClaimTemplate" => {
            check::<k8s_pb::api::resource::v1::ResourceClaimTemplate>(raw)
        }
        "resource/v1.ResourceClaimTemplateList" => {
            check::<k8s_pb::api::resource::v1::ResourceClaimTemplateList>(raw)
        }
        "resource/v1.ResourceSlice" => check::<k8s_pb::api::resource::v1::ResourceSlice>(raw),
        "resource/v1.ResourceSliceList" => {
            check::<k8s_pb::api::resource::v1::ResourceSliceList>(raw)
        }
        "scheduling/v1.PriorityClass" => check::<k8s_pb::api::scheduling::v1::PriorityClass>(raw),
        "scheduling/v1.PriorityClassList" => {
            check::<k8s_pb::api::scheduling::v1::PriorityClassList>(raw)
        }
        "storage/v1.CSIDriver" => check::<k8s_pb::api::storage::v1::CSIDriver>(raw),
        "storage/v1.CSIDriverList" => check::<k8s_pb::api::storage::v1::CSIDriverList>(raw),
        "storage/v1.CSINode" => check::<k8s_pb::api::storage::v1::CSINode>(raw),
        "storage/v1.CSINodeList" => check::<k8s_pb::api::storage::v1::CSINodeList>(raw),
        "storage/v1.CSIStorageCapacity" => {
            check::<k8s_pb::api::storage::v1::CSIStorageCapacity>(raw)
        }
        "storage/v1.CSIStorageCapacityList" => {
            check::<k8s_pb::api::storage::v1::CSIStorageCapacityList>(raw)
        }
        "storage/v1.StorageClass" => check::<k8s_pb::api::storage::v1::StorageClass>(raw),
        "storage/v1.StorageClassList" => check::<k8s_pb::api::storage::v1::StorageClassList>(raw),
        "storage/v1.VolumeAttachment" => check::<k8s_pb::api::storage::v1::VolumeAttachment>(raw),
        "storage/v1.VolumeAttachmentList" => {
            check::<k8s_pb::api::storage::v1::VolumeAttachmentList>(raw)
        }
        "storage/v1.VolumeAttributesClass" => {
            check::<k8s_pb::api::storage::v1::VolumeAttributesClass>(raw)
        }
        "storage/v1.VolumeAttributesClassList" => {
            check::<k8s_pb::api::storage::v1::VolumeAttributesClassList>(raw)
        }
        // The earlier versions kapi reads from storage.
        "admissionregistration/v1beta1.MutatingWebhookConfiguration" => check::<k8s_pb::api::admissionregistration::v1beta1::MutatingWebhookConfiguration>(raw),
        "admissionregistration/v1beta1.ValidatingAdmissionPolicy" => check::<k8s_pb::api::admissionregistration::v1beta1::ValidatingAdmissionPolicy>(raw),
        "admissionregistration/v1beta1.ValidatingAdmissionPolicyBinding" => check::<k8s_pb::api::admissionregistration::v1beta1::ValidatingAdmissionPolicyBinding>(raw),
        "admissionregistration/v1beta1.ValidatingWebhookConfiguration" => check::<k8s_pb::api::admissionregistration::v1beta1::ValidatingWebhookConfiguration>(raw),
        "apps/v1beta1.ControllerRevision" => check::<k8s_pb::api::apps::v1beta1::ControllerRevision>(raw),
        "apps/v1beta1.Deployment" => check::<k8s_pb::api::apps::v1beta1::Deployment>(raw),
        "apps/v1beta1.StatefulSet" => check::<k8s_pb::api::apps::v1beta1::StatefulSet>(raw),
        "apps/v1beta2.ControllerRevision" => check::<k8s_pb::api::apps::v1beta2::ControllerRevision>(raw),
        "apps/v1beta2.DaemonSet" => check::<k8s_pb::api::apps::v1beta2::DaemonSet>(raw),
        "apps/v1beta2.Deployment" => check::<k8s_pb::api::apps::v1beta2::Deployment>(raw),
        "apps/v1beta2.ReplicaSet" => check::<k8s_pb::api::apps::v1beta2::ReplicaSet>(raw),
        "apps/v1beta2.StatefulSet" => check::<k8s_pb::api::apps::v1beta2::StatefulSet>(raw),
        "batch/v1beta1.CronJob" => check::<k8s_pb::api::batch::v1beta1::CronJob>(raw),
        "certificates/v1beta1.CertificateSigningRequest" => check::<k8s_pb::api::certificates::v1beta1::CertificateSigningRequest>(raw),
        "coordination/v1beta1.Lease" => check::<k8s_pb::api::coordination::v1beta1::Lease>(raw),
        "discovery/v1beta1.EndpointSlice" => check::<k8s_pb::api::discovery::v1beta1::EndpointSlice>(raw),
        "extensions/v1beta1.DaemonSet" => check::<k8s_pb::api::extensions::v1beta1::DaemonSet>(raw),
        "extensions/v1beta1.Deployment" => check::<k8s_pb::api::extensions::v1beta1::Deployment>(raw),
        "extensions/v1beta1.Ingress" => check::<k8s_pb::api::extensions::v1beta1::Ingress>(raw),
        "extensions/v1beta1.NetworkPolicy" => check::<k8s_pb::api::extensions::v1beta1::NetworkPolicy>(raw),
        "extensions/v1beta1.ReplicaSet" => check::<k8s_pb::api::extensions::v1beta1::ReplicaSet>(raw),
        "flowcontrol/v1beta1.FlowSchema" => check::<k8s_pb::api::flowcontrol::v1beta1::FlowSchema>(raw),
        "flowcontrol/v1beta1.PriorityLevelConfiguration" => check::<k8s_pb::api::flowcontrol::v1beta1::PriorityLevelConfiguration>(raw),
        "flowcontrol/v1beta2.FlowSchema" => check::<k8s_pb::api::flowcontrol::v1beta2::FlowSchema>(raw),
        "flowcontrol/v1beta2.PriorityLevelConfiguration" => check::<k8s_pb::api::flowcontrol::v1beta2::PriorityLevelConfiguration>(raw),
        "flowcontrol/v1beta3.FlowSchema" => check::<k8s_pb::api::flowcontrol::v1beta3::FlowSchema>(raw),
        "flowcontrol/v1beta3.PriorityLevelConfiguration" => check::<k8s_pb::api::flowcontrol::v1beta3::PriorityLevelConfiguration>(raw),
        "networking/v1beta1.IPAddress" => check::<k8s_pb::api::networking::v1beta1::IPAddress>(raw),
        "networking/v1beta1.Ingress" => check::<k8s_pb::api::networking::v1beta1::Ingress>(raw),
        "networking/v1beta1.IngressClass" => check::<k8s_pb::api::networking::v1beta1::IngressClass>(raw),
        "networking/v1beta1.ServiceCIDR" => check::<k8s_pb::api::networking::v1beta1::ServiceCIDR>(raw),
        "node/v1beta1.RuntimeClass" => check::<k8s_pb::api::node::v1beta1::RuntimeClass>(raw),
        "policy/v1beta1.PodDisruptionBudget" => check::<k8s_pb::api::policy::v1beta1::PodDisruptionBudget>(raw),
        "rbac/v1beta1.ClusterRole" => check::<k8s_pb::api::rbac::v1beta1::ClusterRole>(raw),
        "rbac/v1beta1.ClusterRoleBinding" => check::<k8s_pb::api::rbac::v1beta1::ClusterRoleBinding>(raw),
        "rbac/v1beta1.Role" => check::<k8s_pb::api::rbac::v1beta1::Role>(raw),
        "rbac/v1beta1.RoleBinding" => check::<k8s_pb::api::rbac::v1beta1::RoleBinding>(raw),
        "resource/v1beta1.DeviceClass" => check::<k8s_pb::api::resource::v1beta1::DeviceClass>(raw),
        "resource/v1beta1.ResourceClaim" => check::<k8s_pb::api::resource::v1beta1::ResourceClaim>(raw),
        "resource/v1beta1.ResourceClaimTemplate" => check::<k8s_pb::api::resource::v1beta1::ResourceClaimTemplate>(raw),
        "resource/v1beta1.ResourceSlice" => check::<k8s_pb::api::resource::v1beta1::ResourceSlice>(raw),
        "resource/v1beta2.DeviceClass" => check::<k8s_pb::api::resource::v1beta2::DeviceClass>(raw),
        "resource/v1beta2.ResourceClaim" => check::<k8s_pb::api::resource::v1beta2::ResourceClaim>(raw),
        "resource/v1beta2.ResourceClaimTemplate" => check::<k8s_pb::api::resource::v1beta2::ResourceClaimTemplate>(raw),
        "resource/v1beta2.ResourceSlice" => check::<k8s_pb::api::resource::v1beta2::ResourceSlice>(raw),
        "scheduling/v1beta1.PriorityClass" => check::<k8s_pb::api::scheduling::v1beta1::PriorityClass>(raw),
        "storage/v1beta1.CSIDriver" => check::<k8s_pb::api::storage::v1beta1::CSIDriver>(raw),
        "storage/v1beta1.CSINode" => check::<k8s_pb::api::storage::v1beta1::CSINode>(raw),
        "storage/v1beta1.CSIStorageCapacity" => check::<k8s_pb::api::storage::v1beta1::CSIStorageCapacity>(raw),
        "storage/v1beta1.StorageClass" => check::<k8s_pb::api::storage::v1beta1::StorageClass>(raw),
        "storage/v1beta1.VolumeAttachment" => check::<k8s_pb::api::storage::v1beta1::VolumeAttachment>(raw),
        "storage/v1beta1.VolumeAttributesClass" => check::<k8s_pb::api::storage::v1beta1::VolumeAttributesClass>(raw),
        other => {
            panic!("no k8s-pb message listed for {other}: add it to kapi_testing::k8s_pb::reencode")
        }
    }
}
