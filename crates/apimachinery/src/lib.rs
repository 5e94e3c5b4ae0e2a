//! kapi's object model, the equivalent of k8s.io/apimachinery plus the apiserver's request
//! info: `Status` errors, group/version/kind names, label and field selectors, name and
//! metadata validation, resource quantities, and RequestInfo. It knows nothing of storage
//! or HTTP.
//!
//! Messages, reasons and codes are upstream's exactly: clients and tests compare them.

#![warn(missing_docs)]

pub mod fields;
pub mod goduration;
pub mod gofmt;
pub mod gojson;
pub mod gostruct;
pub mod gotime;
pub mod goyaml;
pub mod labels;
pub mod meta;
pub mod quantity;
pub mod request_info;
pub mod schema;
pub mod selection;
pub mod status;
pub mod validation;
pub mod value;

pub use gofmt::{json as go_json, quote};
pub use quantity::{Format, Quantity, QuantityError};
pub use status::{ApiError, Status, StatusCause, StatusDetails};
