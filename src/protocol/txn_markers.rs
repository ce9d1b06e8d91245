//! WriteTxnMarkers (27): the transaction coordinator asks partitions' leaders to write the
//! markers that end transactions (Kafka's `WriteTxnMarkersRequest.json`, v0–1; v1 flexible).
//! Only brokers send it.

use super::{Decode, DecodeResult, Encode, Out, Reader, read_array, read_topics};

/// One transaction's end, to be written into its partitions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMarkerEntry {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// true COMMIT, false ABORT.
    pub commit: bool,
    /// (topic, partitions).
    pub topics: Vec<(String, Vec<i32>)>,
    pub coordinator_epoch: i32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTxnMarkersRequest {
    pub markers: Vec<TxnMarkerEntry>,
}

impl Encode for WriteTxnMarkersRequest {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.markers, |o, m| {
            o.put_i64(m.producer_id);
            o.put_i16(m.producer_epoch);
            o.put_i8(i8::from(m.commit));
            o.put_topics(&m.topics, |o, p| o.put_i32(*p));
            o.put_i32(m.coordinator_epoch);
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for WriteTxnMarkersRequest {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let markers = read_array(r, "markers", 19, |r| {
            let producer_id = r.i64("producer_id")?;
            let producer_epoch = r.i16("producer_epoch")?;
            let commit = r.bool("transaction_result")?;
            let topics = read_topics(r, 4, |r| r.i32("partition_index"))?;
            let coordinator_epoch = r.i32("coordinator_epoch")?;
            r.tags()?;
            Ok(TxnMarkerEntry {
                producer_id,
                producer_epoch,
                commit,
                topics,
                coordinator_epoch,
            })
        })?;
        r.tags()?;
        Ok(WriteTxnMarkersRequest { markers })
    }
}

/// (topic, [(partition, error code)]) of one producer's markers.
pub type MarkerErrors = Vec<(String, Vec<(i32, i16)>)>;

/// Per producer id, per partition, the error (0 when its marker is written and replicated).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteTxnMarkersResponse {
    pub markers: Vec<(i64, MarkerErrors)>,
}

impl Encode for WriteTxnMarkersResponse {
    fn encode(&self, out: &mut Out<'_>) {
        out.put_array(&self.markers, |o, (pid, topics)| {
            o.put_i64(*pid);
            o.put_topics(topics, |o, (p, code)| {
                o.put_i32(*p);
                o.put_i16(*code);
                o.put_tags();
            });
            o.put_tags();
        });
        out.put_tags();
    }
}

impl<'a> Decode<'a> for WriteTxnMarkersResponse {
    fn decode(r: &mut Reader<'a>) -> DecodeResult<Self> {
        let markers = read_array(r, "markers", 12, |r| {
            let pid = r.i64("producer_id")?;
            let topics = read_topics(r, 6, |r| {
                let p = (r.i32("partition_index")?, r.i16("error_code")?);
                r.tags()?;
                Ok(p)
            })?;
            r.tags()?;
            Ok((pid, topics))
        })?;
        r.tags()?;
        Ok(WriteTxnMarkersResponse { markers })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::header::WRITE_TXN_MARKERS;
    use crate::protocol::round_trip_at;

    #[test]
    fn both_versions_round_trip() {
        let req = WriteTxnMarkersRequest {
            markers: vec![TxnMarkerEntry {
                producer_id: 9,
                producer_epoch: 2,
                commit: true,
                topics: vec![("t".into(), vec![0, 3])],
                coordinator_epoch: 5,
            }],
        };
        let resp = WriteTxnMarkersResponse {
            markers: vec![(9, vec![("t".into(), vec![(0, 0), (3, 6)])])],
        };
        for v in 0..=1 {
            assert_eq!(round_trip_at(&req, WRITE_TXN_MARKERS, v), req);
            assert_eq!(round_trip_at(&resp, WRITE_TXN_MARKERS, v), resp);
        }
    }
}
