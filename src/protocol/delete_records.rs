//! DeleteRecords (21): move partitions' log start offsets forward, what
//! `kafka-delete-records.sh` and the admin clients' `deleteRecords` send.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_topics};

/// Offset -1 in a request: the partition's high watermark.
pub const HIGH_WATERMARK: i64 = -1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecordsRequest {
    /// (topic, [(partition, delete the records before this offset)]).
    pub topics: Vec<(String, Vec<(i32, i64)>)>,
    pub timeout_ms: i32,
}

impl<'a> Decode<'a> for DeleteRecordsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let topics = read_topics(r, 12, |r| {
            let p = (r.i32("partition_index")?, r.i64("offset")?);
            r.tags()?;
            Ok(p)
        })?;
        let timeout_ms = r.i32("timeout_ms")?;
        r.tags()?;
        Ok(DeleteRecordsRequest { topics, timeout_ms })
    }
}

impl Encode for DeleteRecordsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_topics(&self.topics, |o, (p, offset)| {
            o.put_i32(*p);
            o.put_i64(*offset);
            o.put_tags();
        });
        out.put_i32(self.timeout_ms);
        out.put_tags();
    }
}

/// One partition's outcome: its log start offset after (the low watermark), and the error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeletedRecords {
    pub partition: i32,
    pub low_watermark: i64,
    pub error_code: i16,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecordsResponse {
    pub topics: Vec<(String, Vec<DeletedRecords>)>,
}

impl Encode for DeleteRecordsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        let topics = &self.topics;
        out.put_i32(0);
        out.put_topics(topics, |o, p| {
            o.put_i32(p.partition);
            o.put_i64(p.low_watermark);
            o.put_i16(p.error_code);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DeleteRecordsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
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
        Ok(DeleteRecordsResponse { topics })
    }
}
