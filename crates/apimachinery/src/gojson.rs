//! Go's JSON syntax errors, which reach clients verbatim: in the 400 of a malformed request
//! body and in the validation messages of docker config secrets. Go checks the syntax of the
//! whole input first (its scanner's messages: `invalid character 'x' looking for beginning of
//! value`, `unexpected end of JSON input`, ...) and then whether the value fits the target.

use crate::quote;

/// How deep Go's scanner lets arrays and objects nest.
const MAX_NESTING_DEPTH: usize = 10_000;

/// What the scanner expects next (Go's scanner step functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    BeginValueOrEmpty,
    BeginValue,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// Inside `\u`, with this many hex digits read.
    InStringEscU(u8),
    Neg,
    Zero,
    One,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal: the literal, how many bytes are matched.
    Literal(&'static [u8], usize),
}

/// Where a value sits (Go's parse states).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

struct Scanner {
    step: Step,
    stack: Vec<Parse>,
    end_top: bool,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

/// A byte as Go's scanner quotes it in messages.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_string(),
        b'"' => "'\"'".to_string(),
        _ => {
            let quoted = quote(&char::from(c).to_string());
            format!("'{}'", &quoted[1..quoted.len() - 1])
        }
    }
}

fn invalid(c: u8, context: &str) -> String {
    format!("invalid character {} {context}", quote_char(c))
}

impl Scanner {
    fn new() -> Self {
        Scanner {
            step: Step::BeginValue,
            stack: Vec::new(),
            end_top: false,
        }
    }

    fn push(&mut self, parse: Parse) -> Result<(), String> {
        self.stack.push(parse);
        if self.stack.len() > MAX_NESTING_DEPTH {
            return Err("exceeded max depth".to_string());
        }
        Ok(())
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.step = Step::EndTop;
            self.end_top = true;
        } else {
            self.step = Step::EndValue;
        }
    }

    fn begin_value(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        self.step = match c {
            b'{' => {
                self.push(Parse::ObjectKey)?;
                Step::BeginStringOrEmpty
            }
            b'[' => {
                self.push(Parse::ArrayValue)?;
                Step::BeginValueOrEmpty
            }
            b'"' => Step::InString,
            b'-' => Step::Neg,
            b'0' => Step::Zero,
            b't' => Step::Literal(b"true", 1),
            b'f' => Step::Literal(b"false", 1),
            b'n' => Step::Literal(b"null", 1),
            b'1'..=b'9' => Step::One,
            _ => return Err(invalid(c, "looking for beginning of value")),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Result<(), String> {
        let Some(&top) = self.stack.last() else {
            self.step = Step::EndTop;
            self.end_top = true;
            return self.end_top_step(c);
        };
        if is_space(c) {
            self.step = Step::EndValue;
            return Ok(());
        }
        match top {
            Parse::ObjectKey if c == b':' => {
                *self.stack.last_mut().expect("non-empty") = Parse::ObjectValue;
                self.step = Step::BeginValue;
            }
            Parse::ObjectKey => return Err(invalid(c, "after object key")),
            Parse::ObjectValue if c == b',' => {
                *self.stack.last_mut().expect("non-empty") = Parse::ObjectKey;
                self.step = Step::BeginString;
            }
            Parse::ObjectValue if c == b'}' => self.pop(),
            Parse::ObjectValue => return Err(invalid(c, "after object key:value pair")),
            Parse::ArrayValue if c == b',' => self.step = Step::BeginValue,
            Parse::ArrayValue if c == b']' => self.pop(),
            Parse::ArrayValue => return Err(invalid(c, "after array element")),
        }
        Ok(())
    }

    fn end_top_step(&mut self, c: u8) -> Result<(), String> {
        if !is_space(c) {
            return Err(invalid(c, "after top-level value"));
        }
        Ok(())
    }

    fn step(&mut self, c: u8) -> Result<(), String> {
        match self.step {
            Step::BeginValueOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b']' {
                    return self.end_value(c);
                }
                self.begin_value(c)
            }
            Step::BeginValue => self.begin_value(c),
            Step::BeginStringOrEmpty => {
                if is_space(c) {
                    return Ok(());
                }
                if c == b'}' {
                    *self.stack.last_mut().expect("inside an object") = Parse::ObjectValue;
                    return self.end_value(c);
                }
                self.begin_string(c)
            }
            Step::BeginString => self.begin_string(c),
            Step::EndValue => self.end_value(c),
            Step::EndTop => self.end_top_step(c),
            Step::InString => {
                match c {
                    b'"' => self.step = Step::EndValue,
                    b'\\' => self.step = Step::InStringEsc,
                    0..0x20 => return Err(invalid(c, "in string literal")),
                    _ => {}
                }
                Ok(())
            }
            Step::InStringEsc => {
                self.step = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => Step::InString,
                    b'u' => Step::InStringEscU(0),
                    _ => return Err(invalid(c, "in string escape code")),
                };
                Ok(())
            }
            Step::InStringEscU(read) => {
                if !c.is_ascii_hexdigit() {
                    return Err(invalid(c, "in \\u hexadecimal character escape"));
                }
                self.step = if read == 3 {
                    Step::InString
                } else {
                    Step::InStringEscU(read + 1)
                };
                Ok(())
            }
            Step::Neg => {
                self.step = match c {
                    b'0' => Step::Zero,
                    b'1'..=b'9' => Step::One,
                    _ => return Err(invalid(c, "in numeric literal")),
                };
                Ok(())
            }
            Step::One if c.is_ascii_digit() => Ok(()),
            Step::One | Step::Zero => match c {
                b'.' => {
                    self.step = Step::Dot;
                    Ok(())
                }
                b'e' | b'E' => {
                    self.step = Step::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            Step::Dot => {
                if !c.is_ascii_digit() {
                    return Err(invalid(c, "after decimal point in numeric literal"));
                }
                self.step = Step::Dot0;
                Ok(())
            }
            Step::Dot0 => match c {
                b'0'..=b'9' => Ok(()),
                b'e' | b'E' => {
                    self.step = Step::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            Step::E => {
                if c == b'+' || c == b'-' {
                    self.step = Step::ESign;
                    return Ok(());
                }
                self.exponent_sign(c)
            }
            Step::ESign => self.exponent_sign(c),
            Step::E0 => {
                if c.is_ascii_digit() {
                    return Ok(());
                }
                self.end_value(c)
            }
            Step::Literal(word, matched) => {
                let expected = word[matched];
                if c != expected {
                    let name = std::str::from_utf8(word).unwrap_or_default();
                    let context = format!("in literal {name} (expecting {})", quote_char(expected));
                    return Err(invalid(c, &context));
                }
                self.step = if matched + 1 == word.len() {
                    Step::EndValue
                } else {
                    Step::Literal(word, matched + 1)
                };
                Ok(())
            }
        }
    }

    fn begin_string(&mut self, c: u8) -> Result<(), String> {
        if is_space(c) {
            return Ok(());
        }
        if c == b'"' {
            self.step = Step::InString;
            return Ok(());
        }
        Err(invalid(c, "looking for beginning of object key string"))
    }

    fn exponent_sign(&mut self, c: u8) -> Result<(), String> {
        if c.is_ascii_digit() {
            self.step = Step::E0;
            return Ok(());
        }
        Err(invalid(c, "in exponent of numeric literal"))
    }

    /// The end of input: complete if a top-level value ended.
    fn eof(&mut self) -> Result<(), String> {
        if self.end_top {
            return Ok(());
        }
        let _ = self.step(b' ');
        if self.end_top {
            return Ok(());
        }
        Err("unexpected end of JSON input".to_string())
    }
}

/// Go's syntax check of a JSON document (its `checkValid`): the error Go reports, if any.
pub fn check_valid(data: &[u8]) -> Result<(), String> {
    let mut scanner = Scanner::new();
    for &c in data {
        scanner.step(c)?;
    }
    scanner.eof()
}

/// The error of `json.Unmarshal(data, &map[string]interface{}{})`, or `None` when it
/// succeeds (an object, or `null`).
pub fn unmarshal_map_error(data: &[u8]) -> Option<String> {
    if let Err(message) = check_valid(data) {
        return Some(message);
    }
    let first = data.iter().copied().find(|c| !is_space(*c))?;
    let kind = match first {
        b'{' | b'n' => return None,
        b'[' => "array",
        b'"' => "string",
        b't' | b'f' => "bool",
        _ => "number",
    };
    Some(format!(
        "json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_messages() {
        let cases: &[(&str, Option<&str>)] = &[
            ("{}", None),
            (" {\"a\": [1, 2.5e-3, true, null, \"x\\u00e9\"]} ", None),
            ("null", None),
            ("", Some("unexpected end of JSON input")),
            ("   ", Some("unexpected end of JSON input")),
            ("{\"a\":", Some("unexpected end of JSON input")),
            (
                "x",
                Some("invalid character 'x' looking for beginning of value"),
            ),
            (
                "{x",
                Some("invalid character 'x' looking for beginning of object key string"),
            ),
            ("{\"a\" 1}", Some("invalid character '1' after object key")),
            (
                "{\"a\":1 2}",
                Some("invalid character '2' after object key:value pair"),
            ),
            ("[1 2]", Some("invalid character '2' after array element")),
            ("{} x", Some("invalid character 'x' after top-level value")),
            ("{}}", Some("invalid character '}' after top-level value")),
            (
                "\"a\nb\"",
                Some("invalid character '\\n' in string literal"),
            ),
            (
                "\"\\x\"",
                Some("invalid character 'x' in string escape code"),
            ),
            (
                "\"\\u12g4\"",
                Some("invalid character 'g' in \\u hexadecimal character escape"),
            ),
            ("-x", Some("invalid character 'x' in numeric literal")),
            (
                "1.x",
                Some("invalid character 'x' after decimal point in numeric literal"),
            ),
            (
                "1ex",
                Some("invalid character 'x' in exponent of numeric literal"),
            ),
            ("tru", Some("unexpected end of JSON input")),
            (
                "trux",
                Some("invalid character 'x' in literal true (expecting 'e')"),
            ),
            (
                "nul'",
                Some("invalid character '\\'' in literal null (expecting 'l')"),
            ),
            (
                "{'a':1}",
                Some("invalid character '\\'' looking for beginning of object key string"),
            ),
            (
                "[1,]",
                Some("invalid character ']' looking for beginning of value"),
            ),
            (
                "[]",
                Some("json: cannot unmarshal array into Go value of type map[string]interface {}"),
            ),
            (
                "\"s\"",
                Some("json: cannot unmarshal string into Go value of type map[string]interface {}"),
            ),
            (
                "12",
                Some("json: cannot unmarshal number into Go value of type map[string]interface {}"),
            ),
            (
                "false",
                Some("json: cannot unmarshal bool into Go value of type map[string]interface {}"),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(
                unmarshal_map_error(input.as_bytes()).as_deref(),
                *want,
                "{input:?}"
            );
        }
    }
}

/// Go's `json.Indent(dst, src, "", "  ")` as a stream: re-indents compact JSON the way
/// `json.MarshalIndent` writes it (kube-apiserver's pretty serializer), fed chunk by chunk so
/// a streamed LIST stays streamed. Whitespace outside strings is dropped (so is the compact
/// encoder's final newline: `MarshalIndent` writes none); empty objects and arrays stay `{}`
/// and `[]`.
#[derive(Debug, Default)]
pub struct Indenter {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// A `{` or `[` was written and its newline is held back until the next token shows it
    /// is not empty.
    opened: bool,
}

impl Indenter {
    /// Appends the indented form of `chunk`, the next bytes of the document, to `out`.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        out.reserve(chunk.len() + chunk.len() / 4);
        for &byte in chunk {
            if self.in_string {
                out.push(byte);
                match (self.escaped, byte) {
                    (true, _) => self.escaped = false,
                    (false, b'\\') => self.escaped = true,
                    (false, b'"') => self.in_string = false,
                    _ => {}
                }
                continue;
            }
            if byte.is_ascii_whitespace() {
                continue;
            }
            let closing = matches!(byte, b'}' | b']');
            if self.opened && !closing {
                self.opened = false;
                self.depth += 1;
                self.newline(out);
            }
            match byte {
                b'{' | b'[' => {
                    self.opened = true;
                    out.push(byte);
                }
                b',' => {
                    out.push(byte);
                    self.newline(out);
                }
                b':' => out.extend_from_slice(b": "),
                b'}' | b']' => {
                    if self.opened {
                        self.opened = false;
                    } else {
                        self.depth = self.depth.saturating_sub(1);
                        self.newline(out);
                    }
                    out.push(byte);
                }
                b'"' => {
                    self.in_string = true;
                    out.push(byte);
                }
                _ => out.push(byte),
            }
        }
    }

    fn newline(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
        out.extend(std::iter::repeat_n(b' ', 2 * self.depth));
    }
}

#[cfg(test)]
mod indent_tests {
    use super::Indenter;

    fn indent(chunks: &[&str]) -> String {
        let mut indenter = Indenter::default();
        let mut out = Vec::new();
        for chunk in chunks {
            indenter.push(chunk.as_bytes(), &mut out);
        }
        String::from_utf8(out).unwrap()
    }

    /// The output of Go's `json.MarshalIndent(v, "", "  ")` for the same value.
    #[test]
    fn indents_as_go_marshal_indent() {
        let compact = r#"{"kind":"Status","metadata":{},"details":{"causes":[{"a":"x, y: {z}"},[]]},"s":"q\"{,}","code":404}"#;
        let go = "{\n  \"kind\": \"Status\",\n  \"metadata\": {},\n  \"details\": {\n    \"causes\": [\n      {\n        \"a\": \"x, y: {z}\"\n      },\n      []\n    ]\n  },\n  \"s\": \"q\\\"{,}\",\n  \"code\": 404\n}";
        assert_eq!(indent(&[compact, "\n"]), go);
        // Any split into chunks gives the same bytes.
        for at in 0..compact.len() {
            assert_eq!(
                indent(&[&compact[..at], &compact[at..], "\n"]),
                go,
                "split at {at}"
            );
        }
        assert_eq!(indent(&["[]\n"]), "[]");
        assert_eq!(
            indent(&["{\"a\":[1,2]}"]),
            "{\n  \"a\": [\n    1,\n    2\n  ]\n}"
        );
    }
}
