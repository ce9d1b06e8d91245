// The official Java client's KafkaConsumer reading every record of every partition of a topic
// by assign() from the beginning, with the fetch byte limits given: prints `read N` and exits 0
// once it has <expected> records; exits 1 naming what it read of each partition when it cannot
// (the consumer's own exception, such as "Received a non-empty fetch response from the server,
// but no complete records were found", or 90 s without them).
//   java -cp <jars>:. ReadAllPartitions <bootstrap> <topic> <partitions> <expected> <fetch.max.bytes> <max.partition.fetch.bytes>

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class ReadAllPartitions {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1];
        int partitions = Integer.parseInt(args[2]);
        long expected = Long.parseLong(args[3]);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", ByteArrayDeserializer.class.getName());
        c.put("value.deserializer", ByteArrayDeserializer.class.getName());
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.put("fetch.max.bytes", args[4]);
        c.put("max.partition.fetch.bytes", args[5]);
        long[] counts = new long[partitions];
        long total = 0;
        long deadline = System.currentTimeMillis() + 90_000;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(c)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            while (total < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    counts[r.partition()]++;
                    total++;
                }
            }
        } catch (Exception e) {
            System.err.println("the consumer failed: " + e);
        }
        if (total == expected) {
            System.out.println("read " + total);
            System.exit(0);
        }
        System.out.println("read " + total + " of " + expected + "; per partition: " + Arrays.toString(counts));
        System.exit(1);
    }
}
