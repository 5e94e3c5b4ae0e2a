//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (being written).
