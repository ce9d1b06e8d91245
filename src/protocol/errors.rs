//! Kafka error codes, by their modern names (what clients decode them as).

/// Declares `ErrorCode` and its decoder from one list, so a code cannot be named in one and
/// missed in the other; `ErrorCode::ALL` lists every variant for the tests.
macro_rules! error_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal,)*) => {
        /// A protocol error code as sent on the wire.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(i16)]
        pub enum ErrorCode {
            $($(#[$doc])* $name = $code,)*
        }

        impl ErrorCode {
            /// Every code gregor names.
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$name,)*];

            /// Decodes a code received from a broker; codes gregor does not name become
            /// `UnknownServerError`, which is what they mean to us.
            pub fn from_code(c: i16) -> ErrorCode {
                match c {
                    $($code => ErrorCode::$name,)*
                    _ => ErrorCode::UnknownServerError,
                }
            }
        }
    };
}

error_codes! {
    UnknownServerError = -1,
    None = 0,
    OffsetOutOfRange = 1,
    CorruptMessage = 2,
    UnknownTopicOrPartition = 3,
    InvalidFetchSize = 4,
    LeaderNotAvailable = 5,
    NotLeaderForPartition = 6,
    RequestTimedOut = 7,
    BrokerNotAvailable = 8,
    ReplicaNotAvailable = 9,
    MessageTooLarge = 10,
    StaleControllerEpoch = 11,
    OffsetMetadataTooLarge = 12,
    // 13 was StaleLeaderEpochCode in 0.8.2 but clients now read it as NETWORK_EXCEPTION, so
    // gregor never sends it.
    CoordinatorLoadInProgress = 14,
    CoordinatorNotAvailable = 15,
    NotCoordinator = 16,
    InvalidTopic = 17,
    RecordListTooLarge = 18,
    NotEnoughReplicas = 19,
    NotEnoughReplicasAfterAppend = 20,
    InvalidRequiredAcks = 21,
    IllegalGeneration = 22,
    InconsistentGroupProtocol = 23,
    InvalidGroupId = 24,
    UnknownMemberId = 25,
    InvalidSessionTimeout = 26,
    RebalanceInProgress = 27,
    /// A follower's fetch on a client listener (Kafka: no ClusterAction right).
    TopicAuthorizationFailed = 29,
    /// The principal may not do this with the group.
    GroupAuthorizationFailed = 30,
    /// A request only brokers send, on a client listener.
    ClusterAuthorizationFailed = 31,
    /// SaslHandshake naming a mechanism the listener does not serve.
    UnsupportedSaslMechanism = 33,
    /// A SASL request out of turn (after authentication, or on a listener without SASL).
    IllegalSaslState = 34,
    UnsupportedVersion = 35,
    TopicAlreadyExists = 36,
    InvalidPartitions = 37,
    InvalidReplicationFactor = 38,
    InvalidReplicaAssignment = 39,
    InvalidConfig = 40,
    NotController = 41,
    InvalidRequest = 42,
    InvalidTimestamp = 32,
    OutOfOrderSequenceNumber = 45,
    InvalidProducerEpoch = 47,
    /// WriteTxnMarkers from a transaction coordinator older than one that wrote a marker for
    /// the producer since.
    /// A transactional request of a state the transaction is not in (EndTxn with nothing
    /// open, a commit after an abort).
    InvalidTxnState = 48,
    /// The producer id is not the one the transactional id holds.
    InvalidProducerIdMapping = 49,
    /// `transaction.timeout.ms` above `transaction.max.timeout.ms`, or not positive.
    InvalidTransactionTimeout = 50,
    /// The transaction is being ended (markers being written): retry.
    ConcurrentTransactions = 51,
    TransactionCoordinatorFenced = 52,
    TransactionalIdAuthorizationFailed = 53,
    /// A request of a transactional id the coordinator does not know.
    TransactionalIdNotFound = 105,
    /// DescribeLogDirs: a data directory that cannot be read.
    KafkaStorageError = 56,
    UnknownProducerId = 59,
    FetchSessionIdNotFound = 70,
    /// DeleteTopics on a cluster with `delete.topic.enable=false`.
    TopicDeletionDisabled = 73,
    /// The leader epoch a request names is older than the partition's (KIP-320).
    FencedLeaderEpoch = 74,
    /// The leader epoch a request names is newer than this broker knows of yet.
    UnknownLeaderEpoch = 75,
    UnsupportedCompressionType = 76,
    /// Another producer took the transactional id (a higher epoch): this one is done (KIP-588).
    ProducerFenced = 90,
    /// A partition of the request was not attempted, because another was refused.
    OperationNotAttempted = 55,
    NonEmptyGroup = 68,
    GroupIdNotFound = 69,
    MemberIdRequired = 79,
    /// ElectLeaders: the preferred replica is not live or not in the ISR.
    PreferredLeaderNotAvailable = 80,
    GroupMaxSizeReached = 81,
    FencedInstanceId = 82,
    /// ElectLeaders: no live replica may lead.
    EligibleLeadersNotAvailable = 83,
    /// ElectLeaders: the partition already has the leader asked for.
    ElectionNotNeeded = 84,
    /// AlterPartitionReassignments: a cancel for a partition that is not moving.
    NoReassignmentInProgress = 85,
    /// OffsetDelete of a topic the group still subscribes to.
    GroupSubscribedToTopic = 86,
    InvalidRecord = 87,
    /// OffsetFetch with `require_stable`: the partition has an offset pending in an open
    /// transaction.
    UnstableOffsetCommit = 88,
    /// KIP-599: the client's `controller_mutation_rate` is used up; retry after the
    /// answer's throttle time.
    ThrottlingQuotaExceeded = 89,
    /// Authentication failed: wrong password, unknown user, malformed exchange.
    SaslAuthenticationFailed = 58,
    /// A user credential to delete or describe does not exist.
    ResourceNotFound = 91,
    /// The same user credential named twice in one request.
    DuplicateResource = 92,
    /// A SCRAM credential outside the rules (iterations, empty name or salt).
    UnacceptableCredential = 93,
    /// DescribeAcls, CreateAcls, DeleteAcls on a broker without an authorizer.
    SecurityDisabled = 54,
    UnknownTopicId = 100,
    /// ListTransactions v2: a transactional id pattern that is not a regular expression.
    InvalidRegularExpression = 128,
    UnsupportedEndpointType = 114,
}

impl ErrorCode {
    pub fn code(self) -> i16 {
        self as i16
    }

    /// A Produce answer a producer sends again after refreshing its metadata, as Kafka's
    /// producer retries its `RetriableException`s: leadership moved or is being elected, the
    /// ISR is short for now, or the request timed out (which may have written it: only the
    /// idempotent producer's sequence numbers make that retry free of duplicates).
    pub fn is_retriable_for_produce(self) -> bool {
        matches!(
            self,
            ErrorCode::NotLeaderForPartition
                | ErrorCode::LeaderNotAvailable
                | ErrorCode::RequestTimedOut
                | ErrorCode::UnknownTopicOrPartition
                | ErrorCode::NotEnoughReplicas
        )
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn every_code_round_trips_and_no_other_is_named() {
        let mut seen = std::collections::BTreeSet::new();
        for e in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_code(e.code()), *e, "{e:?}");
            assert!(seen.insert(e.code()), "{e:?}: code {} twice", e.code());
        }
        for c in -1..=200 {
            if !seen.contains(&c) {
                assert_eq!(
                    ErrorCode::from_code(c),
                    ErrorCode::UnknownServerError,
                    "{c}"
                );
            }
        }
        // 0.8.2's StaleLeaderEpochCode: clients read it as another error today.
        assert_eq!(ErrorCode::from_code(13), ErrorCode::UnknownServerError);
        assert!(ErrorCode::ALL.len() > 50);
    }
}
