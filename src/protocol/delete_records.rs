//! DeleteRecords (21): move partitions' log start offsets forward, what
//! `kafka-delete-records.sh` and the admin clients' `deleteRecords` send.

use super::header::{DELETE_RECORDS, is_flexible};
use super::{DecodeResult, Reader, Writer, read_topics, write_topics_v};

/// Offset -1 in a request: the partition's high watermark.
pub const HIGH_WATERMARK: i64 = -1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecordsRequest {
    /// (topic, [(partition, delete the records before this offset)]).
    pub topics: Vec<(String, Vec<(i32, i64)>)>,
    pub timeout_ms: i32,
}

impl DeleteRecordsRequest {
    pub fn decode(r: &mut Reader<'_>) -> DecodeResult<Self> {
        let topics = read_topics(r, 12, |r| {
            let p = (r.i32("partition_index")?, r.i64("offset")?);
            r.tags()?;
            Ok(p)
        })?;
        let timeout_ms = r.i32("timeout_ms")?;
        r.tags()?;
        Ok(DeleteRecordsRequest { topics, timeout_ms })
    }

    pub fn encode(&self, out: &mut Vec<u8>, version: i16) {
        let flex = is_flexible(DELETE_RECORDS, version);
        write_topics_v(out, flex, &self.topics, |o, (p, offset)| {
            o.put_i32(*p);
            o.put_i64(*offset);
            o.put_tags(flex);
        });
        out.put_i32(self.timeout_ms);
        out.put_tags(flex);
    }
}

/// One partition's outcome: its log start offset after (the low watermark), and the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedRecords {
    pub partition: i32,
    pub low_watermark: i64,
    pub error_code: i16,
}

pub fn encode_delete_records_response(
    out: &mut Vec<u8>,
    topics: &[(String, Vec<DeletedRecords>)],
    version: i16,
) {
    let flex = is_flexible(DELETE_RECORDS, version);
    out.put_i32(0);
    write_topics_v(out, flex, topics, |o, p| {
        o.put_i32(p.partition);
        o.put_i64(p.low_watermark);
        o.put_i16(p.error_code);
        o.put_tags(flex);
    });
    out.put_tags(flex);
}

pub fn decode_delete_records_response(
    r: &mut Reader<'_>,
) -> DecodeResult<Vec<(String, Vec<DeletedRecords>)>> {
    r.i32("throttle_time_ms")?;
    let topics = read_topics(r, 14, |r| {
        let p = DeletedRecords {
            partition: r.i32("partition_index")?,
            low_watermark: r.i64("low_watermark")?,
            error_code: r.i16("error_code")?,
        };
        r.tags()?;
        Ok(p)
    })?;
    r.tags()?;
    Ok(topics)
}
