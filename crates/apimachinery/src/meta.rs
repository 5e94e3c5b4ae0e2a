//! Values the server stamps on objects: UIDs, timestamps (metav1.Time's text form) and
//! generated names (the apiserver's SimpleNameGenerator).

use std::time::{SystemTime, UNIX_EPOCH};

use rand::Rng;

/// The characters of generated name suffixes: no vowels (so no words) and no confusable
/// characters, as upstream's.
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// The length of the random suffix of generated names.
const RANDOM_LENGTH: usize = 5;
/// The longest base kept in a generated name, so that it fits in 63 characters.
pub const MAX_GENERATED_NAME_BASE_LENGTH: usize = 63 - RANDOM_LENGTH;

/// A random (version 4) UUID in its 36-character text form, for `metadata.uid`.
pub fn new_uid() -> String {
    let mut b: [u8; 16] = rand::rng().random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// The current time as metav1.MicroTime writes it: UTC, microseconds,
/// `2024-01-02T03:04:05.123456Z`.
pub fn now_rfc3339_micro() -> String {
    let now = crate::gotime::Timestamp::now();
    crate::gotime::format_rfc3339_micro(now.seconds, now.nanos / 1000)
}

/// The current time as metav1.Time writes it: UTC, seconds precision,
/// `2024-01-02T03:04:05Z`.
pub fn now_rfc3339() -> String {
    let seconds = match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    crate::gotime::format_rfc3339(seconds)
}

/// A name for an object created with `generateName`: the base, cut to 58 bytes, plus five
/// random characters from upstream's alphabet.
pub fn generate_name(base: &str) -> String {
    let mut end = base.len().min(MAX_GENERATED_NAME_BASE_LENGTH);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    let mut rng = rand::rng();
    let suffix: String = (0..RANDOM_LENGTH)
        .map(|_| char::from(NAME_ALPHABET[rng.random_range(0..NAME_ALPHABET.len())]))
        .collect();
    format!("{}{suffix}", &base[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_are_v4() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        let groups: Vec<&str> = uid.split('-').collect();
        assert_eq!(
            groups.iter().map(|g| g.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(groups[2].starts_with('4'));
        assert!(matches!(groups[3].as_bytes()[0], b'8' | b'9' | b'a' | b'b'));
        assert_ne!(new_uid(), uid);
    }

    #[test]
    fn timestamps() {
        let now = now_rfc3339();
        assert_eq!(now.len(), 20);
        assert!(now.ends_with('Z') && now.starts_with("20"));
    }

    #[test]
    fn generated_names() {
        let name = generate_name("web-");
        assert_eq!(name.len(), 9);
        assert!(name.starts_with("web-"));
        assert!(name[4..].bytes().all(|c| NAME_ALPHABET.contains(&c)));
        let long = generate_name(&"a".repeat(70));
        assert_eq!(long.len(), 63);
        assert!(long.starts_with(&"a".repeat(58)));
        assert!(crate::validation::name_is_dns_subdomain(&long, false).is_empty());
        assert_eq!(generate_name(&"é".repeat(40)).len(), 58 + 5);
    }
}
