//! Compressed message sets (magic 0 and 1): a wrapper message whose value is a compressed inner
//! message set. gzip (codec 1) and snappy (codec 2) are supported; snappy is read both as a raw
//! block (librdkafka) and in xerial/snappy-java framing (the JVM, kafka-python), and written as
//! a raw block, which both client libraries read.

use std::io::{Read, Write};

pub const GZIP: i8 = 1;
pub const SNAPPY: i8 = 2;

/// Magic bytes that open a xerial-framed snappy stream.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Refuse to inflate a wrapper beyond this (a zip bomb in a produce request).
pub const MAX_DECOMPRESSED: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressionError {
    UnsupportedCodec(i8),
    Corrupt(String),
    TooLarge,
}

impl std::fmt::Display for CompressionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompressionError::UnsupportedCodec(c) => write!(f, "unsupported compression codec {c}"),
            CompressionError::Corrupt(why) => write!(f, "corrupt compressed payload: {why}"),
            CompressionError::TooLarge => {
                write!(f, "decompressed payload above {MAX_DECOMPRESSED} bytes")
            }
        }
    }
}

/// The codec a user names on the command line: `none`, `gzip` or `snappy`.
pub fn codec_by_name(name: &str) -> Result<Option<i8>, String> {
    match name {
        "none" => Ok(None),
        "gzip" => Ok(Some(GZIP)),
        "snappy" => Ok(Some(SNAPPY)),
        other => Err(format!(
            "--compression must be none, gzip or snappy, got `{other}`"
        )),
    }
}

pub fn decompress(codec: i8, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
    let out = match codec {
        GZIP => {
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(data)
                .take(MAX_DECOMPRESSED as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
            out
        }
        SNAPPY if data.len() > 16 && data[..8] == XERIAL_MAGIC => xerial_decode(&data[16..])?,
        SNAPPY => raw_snappy_decode(data)?,
        c => return Err(CompressionError::UnsupportedCodec(c)),
    };
    if out.len() > MAX_DECOMPRESSED {
        return Err(CompressionError::TooLarge);
    }
    Ok(out)
}

fn raw_snappy_decode(data: &[u8]) -> Result<Vec<u8>, CompressionError> {
    let len =
        snap::raw::decompress_len(data).map_err(|e| CompressionError::Corrupt(e.to_string()))?;
    if len > MAX_DECOMPRESSED {
        return Err(CompressionError::TooLarge);
    }
    snap::raw::Decoder::new()
        .decompress_vec(data)
        .map_err(|e| CompressionError::Corrupt(e.to_string()))
}

/// After the 16-byte header: repeated [int32 BE length][raw snappy block].
fn xerial_decode(mut data: &[u8]) -> Result<Vec<u8>, CompressionError> {
    let mut out = Vec::new();
    while !data.is_empty() {
        if data.len() < 4 {
            return Err(CompressionError::Corrupt(
                "truncated xerial block length".into(),
            ));
        }
        let n = i32::from_be_bytes([data[0], data[1], data[2], data[3]]);
        if n < 0 || n as usize > data.len() - 4 {
            return Err(CompressionError::Corrupt(
                "xerial block length past the payload".into(),
            ));
        }
        out.extend(raw_snappy_decode(&data[4..4 + n as usize])?);
        if out.len() > MAX_DECOMPRESSED {
            return Err(CompressionError::TooLarge);
        }
        data = &data[4 + n as usize..];
    }
    Ok(out)
}

pub fn compress(codec: i8, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
    match codec {
        GZIP => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data)
                .and_then(|_| e.finish())
                .map_err(|e| CompressionError::Corrupt(e.to_string()))
        }
        SNAPPY => snap::raw::Encoder::new()
            .compress_vec(data)
            .map_err(|e| CompressionError::Corrupt(e.to_string())),
        c => Err(CompressionError::UnsupportedCodec(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_xerial_framing() {
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        for codec in [GZIP, SNAPPY] {
            assert_eq!(
                decompress(codec, &compress(codec, &data).unwrap()).unwrap(),
                data
            );
        }
        let block = snap::raw::Encoder::new().compress_vec(&data).unwrap();
        let mut framed = XERIAL_MAGIC.to_vec();
        framed.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 1]);
        framed.extend_from_slice(&(block.len() as i32).to_be_bytes());
        framed.extend_from_slice(&block);
        assert_eq!(decompress(SNAPPY, &framed).unwrap(), data);
    }

    #[test]
    fn bad_payloads_are_errors() {
        assert!(matches!(
            decompress(GZIP, b"not gzip"),
            Err(CompressionError::Corrupt(_))
        ));
        assert!(decompress(SNAPPY, &[0xff, 0xff, 0xff, 0xff, 0x0f]).is_err());
        assert_eq!(
            decompress(3, b"x"),
            Err(CompressionError::UnsupportedCodec(3))
        );
        let bomb = compress(GZIP, &vec![0u8; MAX_DECOMPRESSED + 10]).unwrap();
        assert_eq!(decompress(GZIP, &bomb), Err(CompressionError::TooLarge));
    }
}
