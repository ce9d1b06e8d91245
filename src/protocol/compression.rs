//! The codecs of Kafka's attributes bits: for magic 0 and 1 the value of a wrapper message, for
//! magic 2 the records block of a batch. gzip (1), snappy (2), lz4 (3, the LZ4 frame format)
//! and zstd (4, magic 2 only, as in Kafka). Snappy is read both as a raw block (librdkafka)
//! and in xerial/snappy-java framing (the JVM, kafka-python), and written as a raw block,
//! which both client libraries read. Decompression stops at `MAX_DECOMPRESSED`.

use std::io::{Read, Write};

pub const GZIP: i8 = 1;
pub const SNAPPY: i8 = 2;
pub const LZ4: i8 = 3;
pub const ZSTD: i8 = 4;

/// Magic bytes that open a xerial-framed snappy stream.
const XERIAL_MAGIC: [u8; 8] = [0x82, b'S', b'N', b'A', b'P', b'P', b'Y', 0];
/// Magic number opening an LZ4 frame (little-endian 0x184D2204).
const LZ4_MAGIC: [u8; 4] = [0x04, 0x22, 0x4d, 0x18];
/// Refuse to inflate a wrapper beyond this (a zip bomb in a produce request).
pub const MAX_DECOMPRESSED: usize = 64 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressionError {
    UnsupportedCodec(i8),
    Corrupt(String),
    /// Inflating would pass this many bytes.
    TooLarge(usize),
}

impl std::fmt::Display for CompressionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompressionError::UnsupportedCodec(c) => write!(f, "unsupported compression codec {c}"),
            CompressionError::Corrupt(why) => write!(f, "corrupt compressed payload: {why}"),
            CompressionError::TooLarge(limit) => {
                write!(f, "decompressed payload above {limit} bytes")
            }
        }
    }
}

/// The codec a user names on the command line: `none`, `gzip`, `snappy`, `lz4` or `zstd`.
pub fn codec_by_name(name: &str) -> Result<Option<i8>, String> {
    match name {
        "none" => Ok(None),
        "gzip" => Ok(Some(GZIP)),
        "snappy" => Ok(Some(SNAPPY)),
        "lz4" => Ok(Some(LZ4)),
        "zstd" => Ok(Some(ZSTD)),
        other => Err(format!(
            "--compression must be none, gzip, snappy, lz4 or zstd, got `{other}`"
        )),
    }
}

/// Reads a decoder to its end, stopping one byte past the limit so that a bomb is refused
/// without being inflated.
fn read_bounded(r: impl Read, limit: usize) -> Result<Vec<u8>, CompressionError> {
    let mut out = Vec::new();
    r.take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
    Ok(out)
}

pub fn decompress(codec: i8, data: &[u8]) -> Result<Vec<u8>, CompressionError> {
    decompress_within(codec, data, MAX_DECOMPRESSED)
}

/// `decompress`, refusing (without inflating further) past `limit` bytes: what is left of a
/// request's budget when it holds several compressed wrappers.
pub fn decompress_within(
    codec: i8,
    data: &[u8],
    limit: usize,
) -> Result<Vec<u8>, CompressionError> {
    let out = match codec {
        GZIP => read_bounded(flate2::read::GzDecoder::new(data), limit)?,
        // A stream too short for a frame header reads as empty to the decoder: insist on the
        // frame's magic number so that junk is an error, not an empty set.
        LZ4 if !data.starts_with(&LZ4_MAGIC) => {
            return Err(CompressionError::Corrupt("not an LZ4 frame".into()));
        }
        LZ4 => read_bounded(lz4_flex::frame::FrameDecoder::new(data), limit)?,
        ZSTD => read_bounded(
            zstd::stream::read::Decoder::new(data)
                .map_err(|e| CompressionError::Corrupt(e.to_string()))?,
            limit,
        )?,
        SNAPPY if data.len() > 16 && data[..8] == XERIAL_MAGIC => {
            xerial_decode(&data[16..], limit)?
        }
        SNAPPY => raw_snappy_decode(data, limit)?,
        c => return Err(CompressionError::UnsupportedCodec(c)),
    };
    if out.len() > limit {
        return Err(CompressionError::TooLarge(limit));
    }
    Ok(out)
}

fn raw_snappy_decode(data: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
    let len =
        snap::raw::decompress_len(data).map_err(|e| CompressionError::Corrupt(e.to_string()))?;
    if len > limit {
        return Err(CompressionError::TooLarge(limit));
    }
    snap::raw::Decoder::new()
        .decompress_vec(data)
        .map_err(|e| CompressionError::Corrupt(e.to_string()))
}

/// After the 16-byte header: repeated [int32 BE length][raw snappy block].
fn xerial_decode(mut data: &[u8], limit: usize) -> Result<Vec<u8>, CompressionError> {
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
        out.extend(raw_snappy_decode(
            &data[4..4 + n as usize],
            limit - out.len(),
        )?);
        if out.len() > limit {
            return Err(CompressionError::TooLarge(limit));
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
        LZ4 => {
            // Independent 64 KB blocks and no checksums: the frame the Java client's
            // KafkaLZ4BlockInputStream reads.
            let info = lz4_flex::frame::FrameInfo::new()
                .block_size(lz4_flex::frame::BlockSize::Max64KB)
                .block_mode(lz4_flex::frame::BlockMode::Independent);
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data)
                .map_err(|e| CompressionError::Corrupt(e.to_string()))?;
            e.finish()
                .map_err(|e| CompressionError::Corrupt(e.to_string()))
        }
        ZSTD => zstd::bulk::compress(data, 3).map_err(|e| CompressionError::Corrupt(e.to_string())),
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
        for codec in [GZIP, SNAPPY, LZ4, ZSTD] {
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
        assert!(decompress(LZ4, b"not lz4").is_err());
        assert!(decompress(LZ4, b"lz4?").is_err());
        assert!(decompress(ZSTD, b"not zstd").is_err());
        assert_eq!(
            decompress(5, b"x"),
            Err(CompressionError::UnsupportedCodec(5))
        );
        for codec in [GZIP, LZ4, ZSTD] {
            let bomb = compress(codec, &vec![0u8; MAX_DECOMPRESSED + 10]).unwrap();
            assert_eq!(
                decompress(codec, &bomb),
                Err(CompressionError::TooLarge(MAX_DECOMPRESSED))
            );
        }
    }
}
