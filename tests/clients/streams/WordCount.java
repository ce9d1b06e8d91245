// Kafka Streams' word count against gregor (tests/kafka_apps/streams.rs): lines of <input> split into
// words, re-keyed by word (a repartition topic), counted in a state store backed by a
// changelog topic (compacted), each new count written to <output> as a decimal string. Streams
// creates both internal topics itself. Prints `state NEW_STATE` at each state change; stops
// cleanly when its stdin closes. The processing guarantee is at_least_once unless given.
//   java -cp <target/streams/*>:. WordCount <bootstrap> <application.id> <input> <output> <state.dir> [guarantee]

import java.util.Arrays;
import java.util.Properties;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.state.Stores;

public class WordCount {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[4]);
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG,
            args.length > 5 ? args[5] : StreamsConfig.AT_LEAST_ONCE);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // Batches of 2 KiB at most: the test's broker has 4 KiB segments (so that the changelog
        // rolls and is cleaned), and a batch larger than a segment is refused.
        p.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), 2048);
        StreamsBuilder b = new StreamsBuilder();
        b.<String, String>stream(args[2])
            .flatMapValues(line -> Arrays.asList(line.toLowerCase().split("\\W+")))
            .filter((k, word) -> !word.isEmpty())
            .groupBy((k, word) -> word)
            .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts"))
                .withValueSerde(Serdes.Long()))
            .toStream()
            .mapValues(n -> Long.toString(n))
            .to(args[3]);
        KafkaStreams streams = new KafkaStreams(b.build(), p);
        streams.setStateListener((now, before) -> {
            System.out.println("state " + now);
            System.out.flush();
        });
        streams.start();
        while (System.in.read() != -1) {
        }
        streams.close();
        System.out.println("closed");
    }
}
