// The official Java client reading one partition by assign() from offset 0 while the test
// changes its leader: prints each value as it arrives and exits once it has <count>. Offset
// resets are off (auto.offset.reset=none), so a consumer that cannot validate its position
// after the leader change (KIP-320: OffsetForLeaderEpoch with the epoch from Metadata) fails
// instead of starting over.
//   java -cp <jars>:. FollowLeaderChange <bootstrap> <topic> <count>

import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

public class FollowLeaderChange {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "none");
        c.put("metadata.max.age.ms", "1000");
        c.put("fetch.max.wait.ms", "100");
        long deadline = System.currentTimeMillis() + 120_000;
        int got = 0;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seek(tp, 0);
            while (got < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    System.out.println(r.value());
                    System.out.flush();
                    got++;
                }
            }
        }
        if (got < count) {
            System.err.println("got " + got + " of " + count + " values before the deadline");
            System.exit(1);
        }
    }
}
