//! The admission webhooks (being written).
