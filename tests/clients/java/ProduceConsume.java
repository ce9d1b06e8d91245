// The official Java client (kafka-clients) against gregor, with its defaults (idempotence
// on, acks=all): produces records with a key, a header and a timestamp, with the codec
// given, then reads them back by assign() and prints one line per record, so the Rust test
// can check what arrived; then consumes the topic again in a consumer group and commits.
//   java -cp <jars>:. ProduceConsume <bootstrap> <topic> <count> <codec>
// With CLIENT_PROPERTIES naming a properties file, its settings (a SASL login, say) are added
// to the producer's and the consumer's.
// Prints "sent <partition> <offset>" per acknowledged record, then
// "got <offset> <key> <value> <timestamp> <header>=<value>" per record read.

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class ProduceConsume {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        String codec = args[3];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("compression.type", codec);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("delivery.timeout.ms", "30000");
        p.put("request.timeout.ms", "20000");
        Properties extra = new Properties();
        String extraFile = System.getenv("CLIENT_PROPERTIES");
        if (extraFile != null) {
            try (var in = new java.io.FileInputStream(extraFile)) {
                extra.load(in);
            }
        }
        p.putAll(extra);
        long ts = 1_700_000_000_000L;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ProducerRecord<String, String> r =
                        new ProducerRecord<>(topic, 0, ts + i, "k" + i, codec + i);
                r.headers().add("h", ("x" + i).getBytes());
                sent.add(producer.send(r));
            }
            for (Future<RecordMetadata> f : sent) {
                RecordMetadata md = f.get();
                System.out.println("sent " + md.partition() + " " + md.offset());
            }
        }
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        c.put("enable.auto.commit", "false");
        c.put("auto.offset.reset", "earliest");
        c.putAll(extra);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            int got = 0;
            long deadline = System.currentTimeMillis() + 30_000;
            while (got < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
                    Header h = r.headers().lastHeader("h");
                    System.out.println("got " + r.offset() + " " + r.key() + " " + r.value() + " "
                            + r.timestamp() + " h=" + (h == null ? "-" : new String(h.value())));
                    got++;
                }
            }
            var times = consumer.offsetsForTimes(java.util.Map.of(tp, ts + 2));
            System.out.println("for_time " + times.get(tp).offset());
        }
        // In a group (the classic protocol at the versions this client picks): every record
        // once, then a commit the group's next member starts from.
        c.put("group.id", "java-" + topic);
        c.put("group.protocol", "classic");
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c)) {
            consumer.subscribe(List.of(topic));
            int got = 0;
            long deadline = System.currentTimeMillis() + 60_000;
            while (got < count && System.currentTimeMillis() < deadline) {
                got += consumer.poll(Duration.ofMillis(500)).count();
            }
            consumer.commitSync();
            var committed = consumer.committed(java.util.Set.of(new TopicPartition(topic, 0)));
            System.out.println("group " + got + " committed "
                    + committed.get(new TopicPartition(topic, 0)).offset());
        }
    }
}
