//! ComponentStatus: its strategy and its printer
//! (kubernetes/pkg/printers/internalversion/printers.go).

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_server::resource::{Strategy, TableConvertor};
use serde_json::Value;

use crate::printers::name_cell;
use crate::resources::common::{col, items, text};
use crate::strategy::{validate_core, validate_core_update};
use crate::util::str_of;

/// ComponentStatuses, stored as they are written: upstream has no strategy for them (its
/// pkg/registry/core/componentstatus probes the components), so only the core metadata
/// rules apply.
pub(super) struct ComponentStatusStrategy;

impl Strategy for ComponentStatusStrategy {
    fn validate(&self, status: &Value) -> FieldErrors {
        validate_core(status, FieldErrors::new())
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

pub(super) fn component_status_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            crate::printers::name_column(0),
            col("Status", "Status of the component conditions"),
            col("Message", "Message of the component conditions"),
            col("Error", "Error of the component conditions"),
        ],
        cells: std::sync::Arc::new(component_status_cells),
    }
}

/// NAME, STATUS (`Healthy`, `Unhealthy` or `Unknown`), MESSAGE, ERROR of the Healthy
/// condition.
fn component_status_cells(status: &Value) -> Vec<Value> {
    let healthy = items(status, "/conditions")
        .iter()
        .find(|c| str_of(c, "type") == "Healthy");
    let (state, message, error) = match healthy {
        Some(c) if str_of(c, "status") == "True" => {
            ("Healthy", str_of(c, "message"), str_of(c, "error"))
        }
        Some(c) => ("Unhealthy", str_of(c, "message"), str_of(c, "error")),
        None => ("Unknown", "", ""),
    };
    vec![name_cell(status), text(state), text(message), text(error)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn component_status_printer() {
        let healthy = json!({"metadata": {"name": "etcd-0"}, "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
        assert_eq!(
            component_status_cells(&healthy)[1..],
            [json!("Healthy"), json!("ok"), json!("")]
        );
    }
}
