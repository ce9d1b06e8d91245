//! Kafka error codes, by their modern names (what clients decode them as).

/// A protocol error code as sent on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i16)]
pub enum ErrorCode {
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
    UnknownProducerId = 59,
    FetchSessionIdNotFound = 70,
    /// The leader epoch a request names is older than the partition's (KIP-320).
    FencedLeaderEpoch = 74,
    /// The leader epoch a request names is newer than this broker knows of yet.
    UnknownLeaderEpoch = 75,
    UnsupportedCompressionType = 76,
    NonEmptyGroup = 68,
    GroupIdNotFound = 69,
    MemberIdRequired = 79,
    GroupMaxSizeReached = 81,
    FencedInstanceId = 82,
    InvalidRecord = 87,
    UnknownTopicId = 100,
    UnsupportedEndpointType = 114,
}

impl ErrorCode {
    pub fn code(self) -> i16 {
        self as i16
    }

    /// Decodes a code received from a broker; codes gregor does not name become
    /// `UnknownServerError`, which is what they mean to us.
    pub fn from_code(c: i16) -> ErrorCode {
        use ErrorCode::*;
        match c {
            0 => None,
            1 => OffsetOutOfRange,
            2 => CorruptMessage,
            3 => UnknownTopicOrPartition,
            4 => InvalidFetchSize,
            5 => LeaderNotAvailable,
            6 => NotLeaderForPartition,
            7 => RequestTimedOut,
            8 => BrokerNotAvailable,
            9 => ReplicaNotAvailable,
            10 => MessageTooLarge,
            11 => StaleControllerEpoch,
            12 => OffsetMetadataTooLarge,
            14 => CoordinatorLoadInProgress,
            15 => CoordinatorNotAvailable,
            16 => NotCoordinator,
            17 => InvalidTopic,
            18 => RecordListTooLarge,
            19 => NotEnoughReplicas,
            20 => NotEnoughReplicasAfterAppend,
            21 => InvalidRequiredAcks,
            22 => IllegalGeneration,
            23 => InconsistentGroupProtocol,
            24 => InvalidGroupId,
            25 => UnknownMemberId,
            26 => InvalidSessionTimeout,
            27 => RebalanceInProgress,
            35 => UnsupportedVersion,
            36 => TopicAlreadyExists,
            37 => InvalidPartitions,
            38 => InvalidReplicationFactor,
            39 => InvalidReplicaAssignment,
            40 => InvalidConfig,
            41 => NotController,
            42 => InvalidRequest,
            32 => InvalidTimestamp,
            68 => NonEmptyGroup,
            45 => OutOfOrderSequenceNumber,
            47 => InvalidProducerEpoch,
            59 => UnknownProducerId,
            70 => FetchSessionIdNotFound,
            74 => FencedLeaderEpoch,
            75 => UnknownLeaderEpoch,
            76 => UnsupportedCompressionType,
            69 => GroupIdNotFound,
            79 => MemberIdRequired,
            81 => GroupMaxSizeReached,
            82 => FencedInstanceId,
            87 => InvalidRecord,
            100 => UnknownTopicId,
            114 => UnsupportedEndpointType,
            _ => UnknownServerError,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;

    #[test]
    fn codes_round_trip() {
        for c in -1..=120 {
            let e = ErrorCode::from_code(c);
            if e != ErrorCode::UnknownServerError {
                assert_eq!(e.code(), c);
            }
        }
        assert_eq!(ErrorCode::from_code(13), ErrorCode::UnknownServerError);
    }
}
