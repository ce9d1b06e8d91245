//! Secrets of the dynamic broker configuration stored encrypted, as Kafka's
//! `EncryptingPasswordEncoder` stores them: a key derived from `password.encoder.secret` by
//! PBKDF2 (HMAC-SHA512 unless `password.encoder.keyfactory.algorithm` says otherwise) over a
//! fresh 256-byte salt, the value encrypted with AES in CBC mode under a fresh IV, and the
//! whole written as Kafka writes it — `name:value` pairs joined by commas, binary fields in
//! Base64 — so a secret gregor stored reads in Kafka and the other way round. ZooKeeper's
//! readers see only that text; the secret never leaves the brokers' own files.

use std::collections::BTreeMap;

use aes::cipher::block_padding::Pkcs7;
use aes::cipher::{BlockModeDecrypt, BlockModeEncrypt, KeyIvInit};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use sha2::{Sha256, Sha512};

/// The cipher Kafka uses by default, and the only one gregor reads or writes.
pub const CIPHER: &str = "AES/CBC/PKCS5Padding";
pub const PBKDF2_SHA512: &str = "PBKDF2WithHmacSHA512";
pub const PBKDF2_SHA256: &str = "PBKDF2WithHmacSHA256";
const SALT_BYTES: usize = 256;

/// How secrets are encrypted: Kafka's `password.encoder.*` keys.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordEncoder {
    pub secret: String,
    /// `password.encoder.old.secret`: values stored under it are still read, so that the
    /// secret can be changed (a broker stores them again under the new one at start).
    pub old_secret: Option<String>,
    pub key_factory: &'static str,
    /// Bits: 128, 192 or 256.
    pub key_length: usize,
    pub iterations: u32,
}

impl std::fmt::Debug for PasswordEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PasswordEncoder")
            .field("key_factory", &self.key_factory)
            .field("key_length", &self.key_length)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

/// Why a stored value could not be read back.
#[derive(Debug, PartialEq, Eq)]
pub struct Undecodable(pub String);

fn derive_key(secret: &str, factory: &str, salt: &[u8], iterations: u32, bits: usize) -> Vec<u8> {
    let mut key = vec![0; bits / 8];
    if factory == PBKDF2_SHA256 {
        pbkdf2::pbkdf2_hmac::<Sha256>(secret.as_bytes(), salt, iterations, &mut key);
    } else {
        pbkdf2::pbkdf2_hmac::<Sha512>(secret.as_bytes(), salt, iterations, &mut key);
    }
    key
}

fn encrypt(key: &[u8], iv: &[u8; 16], plain: &[u8]) -> Vec<u8> {
    match key.len() {
        16 => cbc::Encryptor::<aes::Aes128>::new_from_slices(key, iv)
            .expect("a 16-byte key and IV")
            .encrypt_padded_vec::<Pkcs7>(plain),
        24 => cbc::Encryptor::<aes::Aes192>::new_from_slices(key, iv)
            .expect("a 24-byte key")
            .encrypt_padded_vec::<Pkcs7>(plain),
        _ => cbc::Encryptor::<aes::Aes256>::new_from_slices(key, iv)
            .expect("a 32-byte key")
            .encrypt_padded_vec::<Pkcs7>(plain),
    }
}

fn decrypt(key: &[u8], iv: &[u8], data: &[u8]) -> Option<Vec<u8>> {
    match key.len() {
        16 => cbc::Decryptor::<aes::Aes128>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec::<Pkcs7>(data)
            .ok(),
        24 => cbc::Decryptor::<aes::Aes192>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec::<Pkcs7>(data)
            .ok(),
        32 => cbc::Decryptor::<aes::Aes256>::new_from_slices(key, iv)
            .ok()?
            .decrypt_padded_vec::<Pkcs7>(data)
            .ok(),
        _ => None,
    }
}

/// A Java string's length, which Kafka stores as a check: UTF-16 code units.
fn java_length(s: &str) -> usize {
    s.encode_utf16().count()
}

impl PasswordEncoder {
    /// `value` encrypted under the current secret, in Kafka's stored form.
    pub fn encode(&self, value: &str) -> String {
        let salt = super::scram::random_bytes(SALT_BYTES);
        let mut iv = [0u8; 16];
        iv.copy_from_slice(&super::scram::random_bytes(16));
        let key = derive_key(
            &self.secret,
            self.key_factory,
            &salt,
            self.iterations,
            self.key_length,
        );
        let fields = [
            ("keyFactoryAlgorithm", self.key_factory.to_owned()),
            ("cipherAlgorithm", CIPHER.to_owned()),
            ("keyLength", self.key_length.to_string()),
            ("salt", B64.encode(&salt)),
            ("iterations", self.iterations.to_string()),
            (
                "encryptedPassword",
                B64.encode(encrypt(&key, &iv, value.as_bytes())),
            ),
            ("passwordLength", java_length(value).to_string()),
            ("initializationVector", B64.encode(iv)),
        ];
        fields
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The value of a stored secret, under the current secret or else the old one; with
    /// whether it was the old one (so that it is stored again under the new one).
    pub fn decode(&self, stored: &str) -> Result<(String, bool), Undecodable> {
        let fields: BTreeMap<&str, &str> = stored
            .split(',')
            .filter_map(|f| f.split_once(':'))
            .collect();
        let field = |k: &str| {
            fields
                .get(k)
                .copied()
                .ok_or_else(|| Undecodable(format!("the stored secret has no `{k}`")))
        };
        let number = |k: &str| -> Result<usize, Undecodable> {
            field(k)?
                .parse()
                .map_err(|_| Undecodable(format!("the stored secret's `{k}` is not a number")))
        };
        let bytes = |k: &str| -> Result<Vec<u8>, Undecodable> {
            B64.decode(field(k)?)
                .map_err(|_| Undecodable(format!("the stored secret's `{k}` is not Base64")))
        };
        let cipher = field("cipherAlgorithm")?;
        if cipher != CIPHER {
            return Err(Undecodable(format!(
                "the stored secret is encrypted with {cipher}; gregor reads {CIPHER}"
            )));
        }
        let factory = fields
            .get("keyFactoryAlgorithm")
            .copied()
            .unwrap_or(PBKDF2_SHA512);
        if factory != PBKDF2_SHA512 && factory != PBKDF2_SHA256 {
            return Err(Undecodable(format!(
                "the stored secret's key is derived with {factory}; gregor derives with {PBKDF2_SHA512} or {PBKDF2_SHA256}"
            )));
        }
        let bits = number("keyLength")?;
        if ![128, 192, 256].contains(&bits) {
            return Err(Undecodable(format!(
                "the stored secret's key length {bits} is not an AES key's"
            )));
        }
        let iterations = u32::try_from(number("iterations")?)
            .map_err(|_| Undecodable("the stored secret's `iterations` is too large".into()))?;
        let (salt, iv, data) = (
            bytes("salt")?,
            bytes("initializationVector")?,
            bytes("encryptedPassword")?,
        );
        let length = number("passwordLength")?;
        let secrets =
            std::iter::once((&self.secret, false)).chain(self.old_secret.iter().map(|s| (s, true)));
        for (secret, old) in secrets {
            let key = derive_key(secret, factory, &salt, iterations, bits);
            let Some(plain) = decrypt(&key, &iv, &data) else {
                continue;
            };
            // A wrong secret fails the padding check nearly always; the length (Kafka's own
            // check) and UTF-8 catch the rest.
            if let Ok(text) = String::from_utf8(plain)
                && java_length(&text) == length
            {
                return Ok((text, old));
            }
        }
        Err(Undecodable(
            "the stored secret cannot be decrypted with `password.encoder.secret` (nor `password.encoder.old.secret`)".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoder(secret: &str) -> PasswordEncoder {
        PasswordEncoder {
            secret: secret.into(),
            old_secret: None,
            key_factory: PBKDF2_SHA512,
            key_length: 128,
            iterations: 1024,
        }
    }

    #[test]
    fn a_secret_reads_back_and_is_not_in_its_stored_form() {
        let e = encoder("s3cret");
        for value in ["key-pass", "", "pässwörd with, commas: and colons"] {
            let stored = e.encode(value);
            if !value.is_empty() {
                assert!(!stored.contains(value), "{stored}");
            }
            assert_eq!(e.decode(&stored), Ok((value.to_owned(), false)));
        }
        // Fresh salt and IV each time.
        assert_ne!(e.encode("x"), e.encode("x"));
        let stored = e.encode("x");
        for field in [
            "keyFactoryAlgorithm:PBKDF2WithHmacSHA512",
            "cipherAlgorithm:AES/CBC/PKCS5Padding",
            "keyLength:128",
            "iterations:1024",
            "passwordLength:1",
        ] {
            assert!(stored.split(',').any(|f| f == field), "{field} in {stored}");
        }
    }

    /// Stored by Kafka 3.9.1's own `EncryptingPasswordEncoder` (secret `s3cret`, 1024
    /// iterations): gregor reads what a ZooKeeper-mode Kafka cluster stored.
    const STORED_BY_KAFKA: &str = "initializationVector:LpnJ9LRf9VVf/+1qZpXw3g==,keyLength:128,salt:b6mVmXMGvzlwA6UA8enzZXB82eoo8YPPbUw2TuVDQzqv3MDlSS55qBtC/V586LrtQ9c7RlpjMUrKOr+iQOQrj41J3S0qLbADYGWONkQ6uhOpqLWBXujBftVEQ/KCAhLnUpThiYY0xpRcAq7UC7vjSCBOcVFCdttK6Dk3L/n3COfiyqnCOB+ak1K1z/SfPGi0XmBRZZCG+EPw9d9UM/RWeF4hL6hPjY/e1mCr40bM+CD9YCb2oiDA0Fgzdo/IUOq6NDGMypTgBpL+R0eRD83I16eRkZ6XLQosqJlV2pL+FWgDpp0d4SGWm+nHqtf/Gc1IYLXSyluok9gcbLug8Yspew==,keyFactoryAlgorithm:PBKDF2WithHmacSHA512,cipherAlgorithm:AES/CBC/PKCS5Padding,iterations:1024,passwordLength:8,encryptedPassword:I5AKcsAHjl3k+PQQ0RIRug==";

    #[test]
    fn a_secret_kafka_stored_reads_back() {
        assert_eq!(
            encoder("s3cret").decode(STORED_BY_KAFKA),
            Ok(("key-pass".to_owned(), false))
        );
        assert!(encoder("other").decode(STORED_BY_KAFKA).is_err());
    }

    #[test]
    fn the_wrong_secret_cannot_read_it_and_the_old_one_still_can() {
        let stored = encoder("first").encode("key-pass");
        assert!(encoder("second").decode(&stored).is_err());
        let rotated = PasswordEncoder {
            old_secret: Some("first".into()),
            ..encoder("second")
        };
        assert_eq!(rotated.decode(&stored), Ok(("key-pass".into(), true)));
        let longer = PasswordEncoder {
            key_length: 256,
            key_factory: PBKDF2_SHA256,
            ..encoder("first")
        };
        // The stored parameters, not the encoder's, say how to read a value.
        assert_eq!(
            encoder("first").decode(&longer.encode("v")),
            Ok(("v".into(), false))
        );
        assert!(encoder("first").decode("keyLength:128").is_err());
        assert!(encoder("first").decode("").is_err());
    }
}
