//! DescribeLogDirs (35): each data directory of the broker asked, its partitions with their
//! size on disk, and the volume's total and usable bytes — what `kafka-log-dirs.sh` and the
//! admin clients' `describeLogDirs` send (KIP-113, KIP-827).

use super::{Decode, DecodeResult, Encode, Out, Reader, read_topics_n};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeLogDirsRequest {
    /// (topic, partitions); `None`: every partition the broker holds.
    pub topics: Option<Vec<(String, Vec<i32>)>>,
}

impl<'a> Decode<'a> for DescribeLogDirsRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let topics = match r.nullable_array_len("topics", 6)? {
            None => None,
            Some(n) => Some(read_topics_n(r, n, 4, |r| r.i32("partition"))?),
        };
        r.tags()?;
        Ok(DescribeLogDirsRequest { topics })
    }
}

impl Encode for DescribeLogDirsRequest {
    fn encode(&self, out: &mut Out<'_>) {
        match &self.topics {
            None => out.put_len(None),
            Some(t) => out.put_topics(t, |o, p| o.put_i32(*p)),
        }
        out.put_tags();
    }
}

/// One partition's log in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirPartition {
    pub partition: i32,
    /// Bytes of its segments.
    pub size: i64,
    /// How far its log end is behind its high watermark (0 on a leader).
    pub offset_lag: i64,
}

/// One data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDir {
    pub error_code: i16,
    pub path: String,
    pub topics: Vec<(String, Vec<LogDirPartition>)>,
    /// The volume's size and what is free for the broker (v4+; -1 when unknown).
    pub total_bytes: i64,
    pub usable_bytes: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribeLogDirsResponse {
    /// The whole request's error (v3+).
    pub error_code: i16,
    pub dirs: Vec<LogDir>,
}

impl Encode for DescribeLogDirsResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_i32(0);
        out.since(3, |o| o.put_i16(self.error_code));
        out.put_array(&self.dirs, |o, d| {
            o.put_i16(d.error_code);
            o.put_str(&d.path);
            o.put_topics(&d.topics, |o, p| {
                o.put_i32(p.partition);
                o.put_i64(p.size);
                o.put_i64(p.offset_lag);
                o.put_i8(0); // is_future_key: gregor moves no replica between directories
                o.put_tags();
            });
            o.since(4, |o| {
                o.put_i64(d.total_bytes);
                o.put_i64(d.usable_bytes);
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for DescribeLogDirsResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        r.i32("throttle_time_ms")?;
        let error_code = r.since(3, 0, |r| r.i16("error_code"))?;
        let n = r.array_len("results", 8)?;
        let mut dirs = Vec::with_capacity(n);
        for _ in 0..n {
            let error_code = r.i16("error_code")?;
            let path = r.string("log_dir")?.to_owned();
            let k = r.array_len("topics", 6)?;
            let topics = read_topics_n(r, k, 21, |r| {
                let p = LogDirPartition {
                    partition: r.i32("partition_index")?,
                    size: r.i64("partition_size")?,
                    offset_lag: r.i64("offset_lag")?,
                };
                r.bool("is_future_key")?;
                r.tags()?;
                Ok(p)
            })?;
            let (total_bytes, usable_bytes) = r.since(4, (-1, -1), |r| {
                Ok((r.i64("total_bytes")?, r.i64("usable_bytes")?))
            })?;
            r.tags()?;
            dirs.push(LogDir {
                error_code,
                path,
                topics,
                total_bytes,
                usable_bytes,
            });
        }
        r.tags()?;
        Ok(DescribeLogDirsResponse { error_code, dirs })
    }
}
