//! A produced batch stored with the codec its topic's `compression.type` names rather than
//! the producer's (Kafka's `LogValidator` recompression): the records block is inflated and
//! compressed again, the header keeps every field — offsets, timestamps, producer id, epoch
//! and sequence — but the codec bits and the length, and the CRC is computed anew. The records
//! themselves are not touched, so a validated batch stays valid.

use byteorder::{BigEndian, ByteOrder};

use super::super::compression;
use super::super::message::SetError;
use super::{ATTRIBUTES_AT, BATCH_OVERHEAD, CODEC_MASK, CRC_AT, codec_of};

/// What a topic's `compression.type` asks of produced batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CompressionType {
    /// Kept as the producer compressed them (Kafka's default, `producer`).
    #[default]
    Producer,
    /// Stored with this codec (0: `uncompressed`).
    Codec(i8),
}

impl CompressionType {
    /// Kafka's names: `producer`, `uncompressed`, `gzip`, `snappy`, `lz4`, `zstd`.
    pub fn parse(name: &str) -> Option<CompressionType> {
        Some(match name {
            "producer" => CompressionType::Producer,
            "uncompressed" => CompressionType::Codec(0),
            "gzip" => CompressionType::Codec(compression::GZIP),
            "snappy" => CompressionType::Codec(compression::SNAPPY),
            "lz4" => CompressionType::Codec(compression::LZ4),
            "zstd" => CompressionType::Codec(compression::ZSTD),
            _ => return None,
        })
    }

    /// The codec a batch compressed with `codec` is to be stored with, when not that one.
    pub fn converts(self, codec: i8) -> Option<i8> {
        match self {
            CompressionType::Codec(c) if c != codec => Some(c),
            _ => None,
        }
    }
}

/// The validated batch `batch` with its records block in `codec` (0: uncompressed).
pub fn recompress(batch: &[u8], codec: i8) -> Result<Vec<u8>, SetError> {
    let bad = |e: compression::CompressionError| SetError::BadCompression(e.to_string());
    let from = codec_of(batch).unwrap_or(0);
    let block = &batch[BATCH_OVERHEAD..];
    let plain = match from {
        0 => block.to_vec(),
        c => compression::decompress(c, block).map_err(bad)?,
    };
    let records = match codec {
        0 => plain,
        c => compression::compress(c, &plain).map_err(bad)?,
    };
    let mut out = Vec::with_capacity(BATCH_OVERHEAD + records.len());
    out.extend_from_slice(&batch[..BATCH_OVERHEAD]);
    out.extend_from_slice(&records);
    let length = (out.len() - 12) as i32;
    BigEndian::write_i32(&mut out[8..12], length);
    let attrs = (BigEndian::read_i16(&out[ATTRIBUTES_AT..]) & !CODEC_MASK) | i16::from(codec);
    BigEndian::write_i16(&mut out[ATTRIBUTES_AT..ATTRIBUTES_AT + 2], attrs);
    let crc = crc32c::crc32c(&out[ATTRIBUTES_AT..]);
    BigEndian::write_u32(&mut out[CRC_AT..CRC_AT + 4], crc);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::{BatchBuilder, NewRecord, parse_batch, validate_for_append};
    use super::*;

    fn batch(codec: i8) -> Vec<u8> {
        let mut b = BatchBuilder::new().idempotent(7, 2, 40);
        for i in 0..50u8 {
            let v = vec![i; 100];
            b.push(&NewRecord {
                timestamp: 1_000 + i64::from(i),
                key: Some(&[i]),
                value: Some(&v),
                headers: &[],
            });
        }
        b.finish(codec).unwrap()
    }

    /// Key, value and timestamp delta of each record.
    type Seen = (Option<Vec<u8>>, Option<Vec<u8>>, i64);

    fn values(b: &[u8]) -> Vec<Seen> {
        let mut out = Vec::new();
        parse_batch(b)
            .unwrap()
            .records()
            .unwrap()
            .for_each(|r| {
                out.push((
                    r.key.map(<[u8]>::to_vec),
                    r.value.map(<[u8]>::to_vec),
                    r.timestamp_delta,
                ))
            })
            .unwrap();
        out
    }

    #[test]
    fn every_codec_to_every_other_keeps_the_records_and_the_producer() {
        let codecs = [
            0,
            compression::GZIP,
            compression::SNAPPY,
            compression::LZ4,
            compression::ZSTD,
        ];
        for from in codecs {
            let original = batch(from);
            for to in codecs {
                let b = recompress(&original, to).unwrap();
                assert_eq!(codec_of(&b), Some(to), "{from} -> {to}");
                let v = validate_for_append(&b, 1 << 20).unwrap();
                assert_eq!(
                    (v.count, v.producer_id, v.producer_epoch, v.base_sequence),
                    (50, 7, 2, 40)
                );
                assert_eq!(values(&b), values(&original), "{from} -> {to}");
            }
        }
    }

    #[test]
    fn kafkas_names() {
        assert_eq!(
            CompressionType::parse("producer"),
            Some(CompressionType::Producer)
        );
        assert_eq!(CompressionType::parse("zstd").unwrap().converts(0), Some(4));
        assert_eq!(CompressionType::parse("gzip").unwrap().converts(1), None);
        assert_eq!(CompressionType::Producer.converts(3), None);
        assert_eq!(
            CompressionType::parse("uncompressed").unwrap().converts(2),
            Some(0)
        );
        assert_eq!(CompressionType::parse("none"), None);
    }
}
