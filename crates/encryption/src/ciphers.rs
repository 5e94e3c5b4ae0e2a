//! The byte formats of kube-apiserver's local-key providers, after their `<key name>:`
//! prefix: AES-CBC (IV ‖ PKCS#7-padded ciphertext), AES-GCM (nonce ‖ ciphertext ‖ tag, the
//! etcd key authenticated) and NaCl secretbox (nonce ‖ tag ‖ ciphertext). Errors carry
//! upstream's messages.

use aes::cipher::block_padding::NoPadding;
use aes::cipher::{BlockDecryptMut, BlockEncryptMut, KeyIvInit, block_padding::Pkcs7};
use aes_gcm::aead::consts::U12;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm, AesGcm};
use crypto_secretbox::XSalsa20Poly1305;
use ring::rand::{SecureRandom, SystemRandom};

/// AES-192-GCM, which ring lacks and upstream accepts.
type Aes192Gcm = AesGcm<aes::Aes192, U12>;

const BLOCK: usize = 16;
const GCM_NONCE: usize = 12;
const SECRETBOX_NONCE: usize = 24;
const SECRETBOX_TAG: usize = 16;
const SHORT: &str = "the stored data was shorter than the required size";

/// One key of a provider.
pub(crate) enum Cipher {
    Cbc(Vec<u8>),
    Gcm(Gcm),
    Secretbox(Box<XSalsa20Poly1305>),
}

pub(crate) enum Gcm {
    A128(Box<Aes128Gcm>),
    A192(Box<Aes192Gcm>),
    A256(Box<Aes256Gcm>),
}

/// Random bytes from the system.
pub(crate) fn random<const N: usize>() -> Result<[u8; N], String> {
    let mut bytes = [0; N];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| "the system's random source failed".to_string())?;
    Ok(bytes)
}

impl Cipher {
    /// An AES-CBC key (16, 24 or 32 bytes).
    pub(crate) fn cbc(key: Vec<u8>) -> Cipher {
        Cipher::Cbc(key)
    }

    /// An AES-GCM key (16, 24 or 32 bytes).
    pub(crate) fn gcm(key: &[u8]) -> Result<Cipher, String> {
        let invalid = |_| format!("invalid AES key size {}", key.len());
        Ok(Cipher::Gcm(match key.len() {
            16 => Gcm::A128(Box::new(Aes128Gcm::new_from_slice(key).map_err(invalid)?)),
            24 => Gcm::A192(Box::new(Aes192Gcm::new_from_slice(key).map_err(invalid)?)),
            _ => Gcm::A256(Box::new(Aes256Gcm::new_from_slice(key).map_err(invalid)?)),
        }))
    }

    /// A secretbox key (32 bytes).
    pub(crate) fn secretbox(key: &[u8]) -> Result<Cipher, String> {
        let cipher = XSalsa20Poly1305::new_from_slice(key).map_err(|_| {
            format!(
                "expected key size 32 for secretbox provider, got {}",
                key.len()
            )
        })?;
        Ok(Cipher::Secretbox(Box::new(cipher)))
    }

    /// Encrypts `plaintext` stored under the etcd key `aad`.
    pub(crate) fn seal(&self, plaintext: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Cipher::Cbc(key) => seal_cbc(key, &random::<BLOCK>()?, plaintext),
            Cipher::Gcm(gcm) => gcm.seal(&random::<GCM_NONCE>()?, plaintext, aad),
            Cipher::Secretbox(cipher) => {
                let nonce = random::<SECRETBOX_NONCE>()?;
                let sealed = cipher
                    .encrypt(crypto_secretbox::Nonce::from_slice(&nonce), plaintext)
                    .map_err(|_| "secretbox sealing failed".to_string())?;
                Ok([&nonce[..], &sealed].concat())
            }
        }
    }

    /// Decrypts what [`Cipher::seal`] wrote under the etcd key `aad`.
    pub(crate) fn open(&self, stored: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        match self {
            Cipher::Cbc(key) => open_cbc(key, stored),
            Cipher::Gcm(gcm) => {
                if stored.len() < GCM_NONCE {
                    return Err(SHORT.into());
                }
                let (nonce, sealed) = stored.split_at(GCM_NONCE);
                gcm.open(nonce, sealed, aad)
            }
            Cipher::Secretbox(cipher) => {
                if stored.len() < SECRETBOX_NONCE + SECRETBOX_TAG {
                    return Err(SHORT.into());
                }
                let (nonce, sealed) = stored.split_at(SECRETBOX_NONCE);
                cipher
                    .decrypt(crypto_secretbox::Nonce::from_slice(nonce), sealed)
                    .map_err(|_| "output array was not large enough for encryption".to_string())
            }
        }
    }
}

/// AES-CBC encryption of `plaintext` (PKCS#7-padded) with `iv`, the IV first.
fn seal_cbc(key: &[u8], iv: &[u8; BLOCK], plaintext: &[u8]) -> Result<Vec<u8>, String> {
    let invalid = |_| format!("invalid AES key size {}", key.len());
    let sealed = match key.len() {
        16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
            .map_err(invalid)?
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
        24 => cbc::Encryptor::<aes::Aes192>::new_from_slices(key, iv)
            .map_err(invalid)?
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
        _ => cbc::Encryptor::<aes::Aes256>::new_from_slices(key, iv)
            .map_err(invalid)?
            .encrypt_padded_vec_mut::<Pkcs7>(plaintext),
    };
    Ok([&iv[..], &sealed].concat())
}

/// AES-CBC decryption with upstream's checks of the length and the padding, in its order.
fn open_cbc(key: &[u8], stored: &[u8]) -> Result<Vec<u8>, String> {
    if stored.len() < BLOCK {
        return Err(SHORT.into());
    }
    let (iv, sealed) = stored.split_at(BLOCK);
    if sealed.len() % BLOCK != 0 {
        return Err("the stored data is not a multiple of the block size".into());
    }
    let invalid = |_| format!("invalid AES key size {}", key.len());
    let decrypted = match key.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .map_err(invalid)?
            .decrypt_padded_vec_mut::<NoPadding>(sealed),
        24 => cbc::Decryptor::<aes::Aes192>::new_from_slices(key, iv)
            .map_err(invalid)?
            .decrypt_padded_vec_mut::<NoPadding>(sealed),
        _ => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .map_err(invalid)?
            .decrypt_padded_vec_mut::<NoPadding>(sealed),
    };
    let mut plain =
        decrypted.map_err(|_| "invalid PKCS7 data (empty or not padded)".to_string())?;
    // Upstream indexes the last byte of an empty result and panics; an IV alone is refused.
    let Some(&pad) = plain.last() else {
        return Err("invalid PKCS7 data (empty or not padded)".into());
    };
    let pad = usize::from(pad);
    if pad == 0 || pad > plain.len() {
        return Err("invalid PKCS7 data (empty or not padded)".into());
    }
    if plain[plain.len() - pad..]
        .iter()
        .any(|b| usize::from(*b) != pad)
    {
        return Err("invalid padding on input".into());
    }
    plain.truncate(plain.len() - pad);
    Ok(plain)
}

impl Gcm {
    fn seal(&self, nonce: &[u8; GCM_NONCE], msg: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        let payload = Payload { msg, aad };
        let nonce = aes_gcm::Nonce::from_slice(nonce);
        let sealed = match self {
            Gcm::A128(c) => c.encrypt(nonce, payload),
            Gcm::A192(c) => c.encrypt(nonce, payload),
            Gcm::A256(c) => c.encrypt(nonce, payload),
        };
        let sealed = sealed.map_err(|_| "AES-GCM sealing failed".to_string())?;
        Ok([&nonce[..], &sealed].concat())
    }

    fn open(&self, nonce: &[u8], msg: &[u8], aad: &[u8]) -> Result<Vec<u8>, String> {
        let payload = Payload { msg, aad };
        let nonce = aes_gcm::Nonce::from_slice(nonce);
        let opened = match self {
            Gcm::A128(c) => c.decrypt(nonce, payload),
            Gcm::A192(c) => c.decrypt(nonce, payload),
            Gcm::A256(c) => c.decrypt(nonce, payload),
        };
        opened.map_err(|_| "cipher: message authentication failed".to_string())
    }
}

#[cfg(test)]
mod tests {
    //! Known answers: upstream's recorded AES-GCM value and Go's NaCl vector, and
    //! docs/research/encryption.md §6.4's fixed-randomness values for CBC.

    use super::*;
    use crate::tests::hex;

    #[test]
    fn upstream_gcm_legacy_data_opens() {
        let cipher = Cipher::gcm(b"snorlax_awesomes").unwrap();
        let stored = hex(
            "9f27c8fcea8a58c467d8e437dbf2d85955f9b4bd912f4ef967d788a0cb07797dac0a3f0a0845605ca85ac8562b4ae1",
        );
        assert_eq!(
            cipher.open(&stored, b"bamboo").unwrap(),
            b"pandas are the best"
        );
        assert_eq!(
            cipher.open(&stored, b"another key").unwrap_err(),
            "cipher: message authentication failed"
        );
    }

    #[test]
    fn gcm_of_every_key_size_matches_fixed_nonce_values() {
        let aad = b"/registry/secrets/default/s1";
        let nonce: [u8; 12] = hex("b0b1b2b3b4b5b6b7b8b9babb").try_into().unwrap();
        let keys: [(usize, &str); 3] = [
            (
                16,
                "2ea8def9a6e40b5ecc4f7b72bd1f3f84bc20232d7f1ffdcc9a74fa309e80d1ab3a45d8",
            ),
            (
                24,
                "cc873d336925fd746573b672e0254570f05181e2416b51a86deb0d1b7a5461a4f88aea",
            ),
            (
                32,
                "e93434cf8dbe9b3e359db7d6a538a8a0e14f3de9746af361e1c4d64237a61c80a3644a",
            ),
        ];
        for (size, sealed) in keys {
            let key: Vec<u8> = (0..size as u8).collect();
            let Cipher::Gcm(gcm) = Cipher::gcm(&key).unwrap() else {
                unreachable!()
            };
            let value = gcm.seal(&nonce, b"pandas are the best", aad).unwrap();
            assert_eq!(
                value,
                [&nonce[..], &hex(sealed)].concat(),
                "AES-{}",
                size * 8
            );
        }
    }

    #[test]
    fn cbc_matches_fixed_iv_values_and_refuses_bad_padding() {
        let iv: [u8; 16] = hex("a0a1a2a3a4a5a6a7a8a9aaabacadaeaf").try_into().unwrap();
        let cases: [(usize, &[u8], &str); 3] = [
            (
                32,
                b"pandas are the best",
                "2dff7dd97b09c7d84e550834736cd0acfea2d6b33f129d470f30b2fd028885e3",
            ),
            (
                32,
                b"0123456789abcdef",
                "ce1cf3a4e3b87b139ba3cff10ace35b606d96b2e184bf22b73d31ba4be14d8c9",
            ),
            (
                16,
                b"pandas are the best",
                "534e1ae7cd8999c3f15765b3572ae381aa52a7d25cd5bb34920fe8a6d85a28cd",
            ),
        ];
        for (size, plain, sealed) in cases {
            let key: Vec<u8> = (0..size as u8).collect();
            let cipher = Cipher::cbc(key.clone());
            let value = seal_cbc(&key, &iv, plain).unwrap();
            assert_eq!(value, [&iv[..], &hex(sealed)].concat());
            assert_eq!(cipher.open(&value, b"").unwrap(), plain);
        }
        let cipher = Cipher::cbc((0..32).collect());
        assert_eq!(cipher.open(&[0; 15], b"").unwrap_err(), SHORT);
        assert_eq!(
            cipher.open(&[0; 20], b"").unwrap_err(),
            "the stored data is not a multiple of the block size"
        );
        assert_eq!(
            cipher.open(&iv, b"").unwrap_err(),
            "invalid PKCS7 data (empty or not padded)"
        );
    }

    #[test]
    fn secretbox_is_nacl_with_the_tag_first() {
        // Go's golang.org/x/crypto/nacl/secretbox TestSecretBox.
        let cipher = Cipher::secretbox(&[1; 32]).unwrap();
        let mut stored = vec![2; 24];
        stored.extend(hex("8442bc313f4626f1359e3b50122b6ce6fe66ddfe7d39d14e637eb4fd5b45beadab55198df6ab5368439792a23c87db70acb6156dc5ef957ac04f6276cf6093b84be77ff0849cc33e34b7254d5a8f65ad"));
        assert_eq!(cipher.open(&stored, b"").unwrap(), [3; 64]);
        let sealed = cipher.seal(b"pandas", b"").unwrap();
        assert_eq!(cipher.open(&sealed, b"").unwrap(), b"pandas");
        assert_eq!(cipher.open(&sealed[..39], b"").unwrap_err(), SHORT);
    }
}
