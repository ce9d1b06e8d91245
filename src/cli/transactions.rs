//! `gregor transactions`, with the habits of Kafka's `kafka-transactions.sh`: list the
//! transactional ids every coordinator knows, describe one, describe a partition's producers,
//! and abort a hanging transaction — one whose producer left records in a partition without
//! the coordinator knowing to end it — by writing its ABORT marker there, as the tool's
//! `abort` does (DescribeProducers for its producer's epoch and coordinator epoch, then
//! WriteTxnMarkers to the partition's leader).

use std::time::Duration;

use clap::Args;

use gregor::client::metadata::{fetch_metadata_with, find_coordinator_of};
use gregor::network::BlockingChannel;
use gregor::protocol::describe_producers::{
    ActiveProducer, DescribeProducersRequest, DescribeProducersResponse,
};
use gregor::protocol::txn_admin::{
    DescribeTransactionsRequest, DescribeTransactionsResponse, ListTransactionsRequest,
    ListTransactionsResponse,
};
use gregor::protocol::txn_markers::{
    TxnMarkerEntry, WriteTxnMarkersRequest, WriteTxnMarkersResponse,
};
use gregor::protocol::{ErrorCode, header};

const CLIENT_ID: &str = "gregor-transactions";
const TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Args)]
pub struct TransactionsArgs {
    /// The brokers to start from, host:port,... (also `--bootstrap`, and kcat's `-b`).
    #[arg(long = "bootstrap-server", visible_alias = "bootstrap", short = 'b', default_value = super::BOOTSTRAP, value_name = "HOST:PORT")]
    bootstrap: String,
    /// kafka-transactions.sh's spelling of the action: `list`, `describe`
    /// (with --transactional-id), `describe-producers`, `abort`.
    #[arg(value_parser = ["list", "describe", "describe-producers", "abort"], value_name = "COMMAND")]
    command: Option<String>,
    /// With `describe`: the transactional id.
    #[arg(long = "transactional-id")]
    transactional_id: Option<String>,
    /// Every transactional id the coordinators know: id, coordinator, producer id, state.
    #[arg(long, group = "action")]
    list: bool,
    /// One transactional id as its coordinator knows it.
    #[arg(long, group = "action", value_name = "TRANSACTIONAL_ID")]
    describe: Option<String>,
    /// The producers of --topic's --partition, as its leader knows them.
    #[arg(long = "describe-producers", group = "action")]
    describe_producers: bool,
    /// Abort the transaction open in --topic's --partition since --start-offset.
    #[arg(long, group = "action")]
    abort: bool,
    #[arg(long)]
    topic: Option<String>,
    #[arg(long)]
    partition: Option<i32>,
    /// The first offset of the transaction to abort (the CurrentTransactionStartOffset that
    /// --describe-producers shows).
    #[arg(long = "start-offset")]
    start_offset: Option<i64>,
    /// With --list: only transactions open longer than this many ms.
    #[arg(long = "duration-filter", value_name = "MS")]
    duration_filter: Option<i64>,
    /// With --list: only transactional ids this regular expression matches whole.
    #[arg(long = "transactional-id-pattern", value_name = "REGEX")]
    transactional_id_pattern: Option<String>,
}

pub fn run(mut a: TransactionsArgs) -> Result<(), String> {
    match a.command.as_deref() {
        Some("list") => a.list = true,
        Some("describe") => {
            a.describe = Some(
                a.transactional_id
                    .clone()
                    .ok_or("--transactional-id is required")?,
            )
        }
        Some("describe-producers") => a.describe_producers = true,
        Some("abort") => a.abort = true,
        _ => {}
    }
    if a.list {
        let req = ListTransactionsRequest {
            state_filters: Vec::new(),
            producer_id_filters: Vec::new(),
            duration_filter_ms: a.duration_filter.unwrap_or(-1),
            transactional_id_pattern: a.transactional_id_pattern,
        };
        list(&a.bootstrap, &req)
    } else if let Some(id) = &a.describe {
        describe(&a.bootstrap, id)
    } else if a.describe_producers || a.abort {
        let topic = a.topic.as_deref().ok_or("--topic is required")?;
        let partition = a.partition.ok_or("--partition is required")?;
        let (leader, producers) = producers_of(&a.bootstrap, topic, partition)?;
        if a.abort {
            let start = a.start_offset.ok_or("--start-offset is required")?;
            abort(leader, topic, partition, start, &producers)
        } else {
            println!(
                "{:<12} {:<14} {:<18} {:<12} {:<18} CurrentTransactionStartOffset",
                "ProducerId",
                "ProducerEpoch",
                "LatestCoordinatorEpoch",
                "LastSequence",
                "LastTimestamp"
            );
            for p in producers {
                println!(
                    "{:<12} {:<14} {:<18} {:<12} {:<18} {}",
                    p.producer_id,
                    p.producer_epoch,
                    p.coordinator_epoch,
                    p.last_sequence,
                    p.last_timestamp,
                    p.current_txn_start_offset
                );
            }
            Ok(())
        }
    } else {
        Err("one of --list, --describe, --describe-producers, --abort is required".into())
    }
}

fn connect(host: &str, port: i32) -> Result<BlockingChannel, String> {
    BlockingChannel::connect(format!("{host}:{port}"), CLIENT_ID, TIMEOUT)
        .map_err(|e| format!("{host}:{port}: {e}"))
}

fn list(bootstrap: &str, req: &ListTransactionsRequest) -> Result<(), String> {
    let meta = fetch_metadata_with(bootstrap, &[], CLIENT_ID, false)?;
    println!(
        "{:<32} {:<12} {:<12} TransactionState",
        "TransactionalId", "Coordinator", "ProducerId"
    );
    let mut failed = Vec::new();
    for b in &meta.brokers {
        let answer = connect(&b.host, b.port).and_then(|mut c| {
            c.send::<ListTransactionsResponse>(header::LIST_TRANSACTIONS, 2, req)
                .map_err(|e| e.to_string())
        });
        match answer {
            Ok(r) if r.error_code == 0 => {
                for (id, pid, state) in r.states {
                    println!("{id:<32} {:<12} {pid:<12} {state}", b.id);
                }
            }
            Ok(r) => failed.push(format!(
                "broker {}: {:?}",
                b.id,
                ErrorCode::from_code(r.error_code)
            )),
            Err(e) => failed.push(format!("broker {}: {e}", b.id)),
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("not every broker answered: {}", failed.join("; ")))
    }
}

fn describe(bootstrap: &str, id: &str) -> Result<(), String> {
    let coordinator = find_coordinator_of(bootstrap, id, 1, CLIENT_ID)?;
    let mut c = connect(&coordinator.host, coordinator.port)?;
    let req = DescribeTransactionsRequest {
        transactional_ids: vec![id.to_owned()],
    };
    let r: DescribeTransactionsResponse = c
        .send(header::DESCRIBE_TRANSACTIONS, 0, &req)
        .map_err(|e| e.to_string())?;
    let t = r.states.into_iter().next().ok_or("an empty answer")?;
    if t.error_code != 0 {
        return Err(format!("{id}: {:?}", ErrorCode::from_code(t.error_code)));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let duration = if t.start_time_ms >= 0 && t.state == "Ongoing" {
        (now - t.start_time_ms).to_string()
    } else {
        "None".into()
    };
    let partitions: Vec<String> = t
        .topics
        .iter()
        .flat_map(|(topic, ps)| ps.iter().map(move |p| format!("{topic}-{p}")))
        .collect();
    println!(
        "{:<12} {:<32} {:<12} {:<14} {:<18} {:<30} {:<22} TopicPartitions",
        "CoordinatorId",
        "TransactionalId",
        "ProducerId",
        "ProducerEpoch",
        "TransactionState",
        "CurrentTransactionStartTimeMs",
        "TransactionDurationMs"
    );
    println!(
        "{:<12} {:<32} {:<12} {:<14} {:<18} {:<30} {:<22} {}",
        coordinator.node_id,
        t.transactional_id,
        t.producer_id,
        t.producer_epoch,
        t.state,
        if t.start_time_ms >= 0 {
            t.start_time_ms.to_string()
        } else {
            "None".into()
        },
        duration,
        partitions.join(",")
    );
    Ok(())
}

/// The partition's leader (a channel to it) and the producers it knows.
fn producers_of(
    bootstrap: &str,
    topic: &str,
    partition: i32,
) -> Result<(BlockingChannel, Vec<ActiveProducer>), String> {
    let meta = fetch_metadata_with(bootstrap, &[topic.to_owned()], CLIENT_ID, false)?;
    let leader = meta
        .topics
        .iter()
        .find(|t| t.topic == topic && t.error_code == 0)
        .and_then(|t| t.partitions.iter().find(|p| p.partition == partition))
        .map(|p| p.leader)
        .filter(|l| *l >= 0)
        .ok_or_else(|| format!("{topic}-{partition} has no leader (or does not exist)"))?;
    let b = meta
        .brokers
        .iter()
        .find(|b| b.id == leader)
        .ok_or_else(|| format!("leader {leader} is not among the brokers"))?;
    let mut c = connect(&b.host, b.port)?;
    let req = DescribeProducersRequest {
        topics: vec![(topic.to_owned(), vec![partition])],
    };
    let r: DescribeProducersResponse = c
        .send(header::DESCRIBE_PRODUCERS, 0, &req)
        .map_err(|e| e.to_string())?;
    let p = r
        .topics
        .into_iter()
        .flat_map(|(_, ps)| ps)
        .next()
        .ok_or("an empty answer")?;
    if p.error_code != 0 {
        return Err(format!(
            "{topic}-{partition}: {:?}",
            ErrorCode::from_code(p.error_code)
        ));
    }
    Ok((c, p.active_producers))
}

fn abort(
    mut leader: BlockingChannel,
    topic: &str,
    partition: i32,
    start: i64,
    producers: &[ActiveProducer],
) -> Result<(), String> {
    let p = producers
        .iter()
        .find(|p| p.current_txn_start_offset == start)
        .ok_or_else(|| format!("no transaction of {topic}-{partition} starts at offset {start}"))?;
    let epoch = i16::try_from(p.producer_epoch).map_err(|_| "a producer epoch out of range")?;
    let req = WriteTxnMarkersRequest {
        markers: vec![TxnMarkerEntry {
            producer_id: p.producer_id,
            producer_epoch: epoch,
            commit: false,
            topics: vec![(topic.to_owned(), vec![partition])],
            coordinator_epoch: p.coordinator_epoch.max(0),
        }],
    };
    let r: WriteTxnMarkersResponse = leader
        .send(header::WRITE_TXN_MARKERS, 1, &req)
        .map_err(|e| e.to_string())?;
    let code = r
        .markers
        .first()
        .and_then(|(_, ts)| ts.first())
        .and_then(|(_, ps)| ps.first())
        .map_or(-1, |(_, c)| *c);
    if code != 0 {
        return Err(format!(
            "the leader refused the marker: {:?}",
            ErrorCode::from_code(code)
        ));
    }
    println!(
        "aborted the transaction of producer {} (epoch {epoch}) in {topic}-{partition} from offset {start}",
        p.producer_id
    );
    Ok(())
}
