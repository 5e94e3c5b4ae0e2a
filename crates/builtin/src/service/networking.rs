//! networking.k8s.io/v1 ServiceCIDR and IPAddress (pkg/registry/networking/servicecidr and
//! ipaddress, pkg/apis/networking/validation): validation with upstream's messages and the
//! printer columns.

use std::net::IpAddr;
use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    FIELD_IMMUTABLE_ERROR_MSG, is_dns1123_subdomain, is_valid_path_segment_name,
};
use kapi_server::resource::{NameValidator, Strategy, SubresourceKind, TableConvertor};
use serde_json::{Value, json};

use super::ipallocator::Cidr;
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, column, name_cell, name_column};
use crate::util::{str_of, strings_of};

const CIDRS_DESCRIPTION: &str = "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs. Max of two CIDRs is allowed, one of each IP family. This field is immutable.";
const PARENT_REF_DESCRIPTION: &str = "ParentRef references the resource that an IPAddress is attached to. An IPAddress must reference a parent object.";
const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// The strategy and printer of ServiceCIDRs.
pub(super) fn service_cidr_strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(ServiceCidrStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("CIDRs", CIDRS_DESCRIPTION, 0),
                age_column(),
            ],
            cells: std::sync::Arc::new(|cidr: &serde_json::Value| {
                let cidrs = strings_of(&cidr["spec"], "cidrs").join(",");
                vec![name_cell(cidr), Value::from(cidrs), age_cell(cidr)]
            }),
        }),
    }
}

/// The strategy and printer of IPAddresses.
pub(super) fn ip_address_strategies() -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(IpAddressStrategy),
        table: Some(TableConvertor {
            order: None,
            columns: vec![
                name_column(0),
                column("ParentRef", PARENT_REF_DESCRIPTION, 0),
            ],
            cells: std::sync::Arc::new(|address: &serde_json::Value| {
                vec![name_cell(address), Value::from(parent_ref_cell(address))]
            }),
        }),
    }
}

/// `resource.group/namespace/name` of the parent, `<none>` without one.
fn parent_ref_cell(address: &Value) -> String {
    let parent = &address["spec"]["parentRef"];
    if !parent.is_object() {
        return "<none>".into();
    }
    let mut cell = str_of(parent, "resource").to_string();
    let group = str_of(parent, "group");
    if !group.is_empty() {
        cell = format!("{cell}.{group}");
    }
    cell = cell.to_lowercase();
    let namespace = str_of(parent, "namespace");
    if !namespace.is_empty() {
        cell = format!("{cell}/{namespace}");
    }
    format!("{cell}/{}", str_of(parent, "name"))
}

/// The strategy of ServiceCIDRs: status only through its subresource.
struct ServiceCidrStrategy;

impl Strategy for ServiceCidrStrategy {
    fn prepare_for_create(&self, cidr: &mut Value) {
        if let Some(fields) = cidr.as_object_mut() {
            fields.remove("status");
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        match old.get("status") {
            Some(status) => new["status"] = status.clone(),
            None => drop(new.as_object_mut().and_then(|f| f.remove("status"))),
        }
    }

    fn validate(&self, cidr: &Value) -> FieldErrors {
        validate_service_cidr(cidr)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = FieldErrors::new();
        let old_cidrs = strings_of(&old["spec"], "cidrs");
        let new_cidrs = strings_of(&new["spec"], "cidrs");
        let path = Path::root("spec").child("cidrs");
        if old_cidrs.len() == new_cidrs.len() {
            for (i, cidr) in old_cidrs.iter().enumerate() {
                if *cidr != new_cidrs[i] {
                    errs.push(FieldError::invalid(
                        &path.index(i),
                        new_cidrs[i],
                        FIELD_IMMUTABLE_ERROR_MSG,
                    ));
                }
            }
        } else if !(old_cidrs.len() == 1 && new_cidrs.len() == 2 && old_cidrs[0] == new_cidrs[0]) {
            let value = new["spec"].get("cidrs").cloned().unwrap_or(Value::Null);
            errs.push(FieldError::invalid(&path, value, FIELD_IMMUTABLE_ERROR_MSG));
        }
        if errs.is_empty() {
            errs.extend(validate_service_cidr(new));
        }
        errs
    }

    fn validate_subresource_update(
        &self,
        _: &SubresourceKind,
        _: &Value,
        _: &Value,
    ) -> FieldErrors {
        FieldErrors::new()
    }
}

/// Upstream's ValidateServiceCIDR: one or two CIDRs, of different families.
fn validate_service_cidr(cidr: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec").child("cidrs");
    let cidrs = strings_of(&cidr["spec"], "cidrs");
    let spec = cidr.get("spec").cloned().unwrap_or_else(|| json!({}));
    if cidrs.is_empty() {
        errs.push(FieldError::required(&path, "at least one CIDR required"));
        return errs;
    }
    if cidrs.len() > 2 {
        errs.push(FieldError::invalid(
            &path,
            spec,
            "may only hold up to 2 values",
        ));
        return errs;
    }
    let parsed: Vec<Option<Cidr>> = cidrs.iter().map(|c| Cidr::parse(c).ok()).collect();
    for (i, (text, cidr)) in cidrs.iter().zip(&parsed).enumerate() {
        if cidr.is_none() {
            errs.push(FieldError::invalid(&path.index(i), *text, INVALID_CIDR));
        }
    }
    if let [Some(first), Some(second)] = parsed.as_slice()
        && first.family() == second.family()
    {
        errs.push(FieldError::invalid(
            &path,
            spec,
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        ));
    }
    errs
}

/// The strategy of IPAddresses: named by a canonical IP, with an immutable parent.
struct IpAddressStrategy;

impl Strategy for IpAddressStrategy {
    fn name_validator(&self) -> NameValidator {
        ip_address_name
    }

    fn validate(&self, address: &Value) -> FieldErrors {
        validate_parent_ref(&address["spec"]["parentRef"])
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = FieldErrors::new();
        let (new_parent, old_parent) = (&new["spec"]["parentRef"], &old["spec"]["parentRef"]);
        if new_parent != old_parent {
            let path = Path::root("spec").child("parentRef");
            errs.push(FieldError::invalid(
                &path,
                new_parent.clone(),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
        errs
    }
}

/// Upstream's ValidateIPAddressName: an IP in its canonical form.
fn ip_address_name(name: &str, _prefix: bool) -> Vec<String> {
    match name.parse::<IpAddr>() {
        Err(_) => vec![format!("ParseAddr({name:?}): unable to parse IP")],
        Ok(ip) if ip.to_string() != name => vec!["must be a canonical format IP address".into()],
        Ok(_) => Vec::new(),
    }
}

/// Upstream's validateIPAddressParentReference.
fn validate_parent_ref(parent: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let path = Path::root("spec").child("parentRef");
    if !parent.is_object() {
        errs.push(FieldError::required(&path, ""));
        return errs;
    }
    let group = str_of(parent, "group");
    if !group.is_empty() {
        for msg in is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&path.child("group"), group, msg));
        }
    }
    for (key, required) in [("resource", true), ("name", true), ("namespace", false)] {
        let value = str_of(parent, key);
        if value.is_empty() {
            if required {
                errs.push(FieldError::required(&path.child(key), ""));
            }
            continue;
        }
        for msg in is_valid_path_segment_name(value) {
            errs.push(FieldError::invalid(&path.child(key), value, msg));
        }
    }
    errs
}
