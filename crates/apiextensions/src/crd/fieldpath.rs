//! JSON paths into a structural schema (upstream's cel.ValidFieldPath), as selectable
//! fields and validation rules' `fieldPath` name fields.

use serde_json::Value;

/// Resolves a JSON path (`.spec.name`; with `allow_array`, also `['key']`) in `schema`
/// as upstream's ValidFieldPath: the field path it names (e.g. `spec.labels[app]` through
/// additionalProperties) and the schema found there, or upstream's reason it is invalid.
pub(crate) fn resolve_field_path<'a>(
    json_path: &str,
    schema: &'a Value,
    allow_array: bool,
) -> Result<(String, &'a Value), String> {
    let mut resolved = String::new();
    let mut current = schema;
    let mut rest = json_path;
    while !rest.is_empty() {
        let delimiter = next_token(rest);
        rest = &rest[delimiter.len()..];
        let name = match delimiter {
            "." => {
                let name = next_token(rest);
                if name.is_empty() {
                    return Err("unexpected end of JSON path".into());
                }
                rest = &rest[name.len()..];
                name.to_string()
            }
            "[" if !allow_array => return Err("array notation is not allowed".into()),
            "[" => {
                let (name, after) = quoted_key(rest)?;
                rest = after;
                name
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        current = step(current, &name, &mut resolved)?;
    }
    Ok((resolved, current))
}

/// One step of [`resolve_field_path`]: a property, else an additionalProperties key.
fn step<'a>(schema: &'a Value, name: &str, resolved: &mut String) -> Result<&'a Value, String> {
    if let Some(properties) = schema["properties"].as_object() {
        let found = properties
            .get(name)
            .ok_or_else(|| "does not refer to a valid field".to_string())?;
        if !resolved.is_empty() {
            resolved.push('.');
        }
        resolved.push_str(name);
        return Ok(found);
    }
    if schema["additionalProperties"].is_object() {
        resolved.push_str(&format!("[{name}]"));
        return Ok(&schema["additionalProperties"]);
    }
    Err("does not refer to a valid field".into())
}

/// After `[`: a single-quoted key and the closing `]`; the key and the rest of the path.
fn quoted_key(rest: &str) -> Result<(String, &str), String> {
    let Some(body) = rest.strip_prefix('\'') else {
        let token = next_token(rest);
        return Err(if token.is_empty() {
            "unexpected end of JSON path".into()
        } else {
            format!("expected single quoted string but got {token}")
        });
    };
    let mut key = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, escaped)) => key.push(escaped),
                None => return Err("unexpected end of JSON path".into()),
            },
            '\'' => {
                let after = &body[i + 1..];
                return match after.strip_prefix(']') {
                    Some(after) => Ok((key, after)),
                    None if after.is_empty() => Err("unexpected end of JSON path".into()),
                    None => Err(format!("expected ] but got {}", next_token(after))),
                };
            }
            other => key.push(other),
        }
    }
    Err("unexpected end of JSON path".into())
}

/// The text up to the next delimiter (`.`, `[`, `]`), or the delimiter itself.
fn next_token(rest: &str) -> &str {
    match rest.find(['.', '[', ']']) {
        Some(0) => &rest[..1],
        Some(end) => &rest[..end],
        None => rest,
    }
}
