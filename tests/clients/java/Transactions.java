// The official Java client's transactional producer against gregor (kafka-clients 4.3.0),
// driven by tests/transaction_coordinator.rs:
//   Transactions <bootstrap> produce <txn id> <topics> <plan>
//       plan: transactions separated by `;`, each `commit|abort:PREFIX:N`, N records valued
//       `PREFIX-i` with key i, record i to the i-th of the comma-separated <topics> in turn.
//       Prints `committed PREFIX` or `aborted PREFIX` as each ends.
//   Transactions <bootstrap> copy <txn id> <group> <in> <out>
//       Consume-transform-produce at read_committed: each poll's records written to <out>
//       (same key and partition, value `copy:<value>`) with the consumed offsets
//       (sendOffsetsToTransaction with the consumer's group metadata) in one transaction.
//       Prints `progress K` after each commit and `done` once it owns every partition of <in>
//       and has read each to its end. An abortable error aborts and rewinds to the committed
//       offsets, as the client's documentation says to.

import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Transactions {
    static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("transactional.id", txnId);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("linger.ms", "5");
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        producer.initTransactions();
        return producer;
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        if (args[1].equals("produce")) {
            produce(bootstrap, args[2], args[3], args[4]);
        } else {
            copy(bootstrap, args[2], args[3], args[4], args[5]);
        }
    }

    static void produce(String bootstrap, String txnId, String topicList, String plan) {
        String[] topics = topicList.split(",");
        try (KafkaProducer<String, String> producer = producer(bootstrap, txnId)) {
            for (String step : plan.split(";")) {
                String[] f = step.split(":");
                producer.beginTransaction();
                for (int i = 0; i < Integer.parseInt(f[2]); i++) {
                    String topic = topics[i % topics.length];
                    producer.send(new ProducerRecord<>(topic, String.valueOf(i), f[1] + "-" + i));
                }
                if (f[0].equals("commit")) {
                    producer.commitTransaction();
                    System.out.println("committed " + f[1]);
                } else {
                    producer.flush();
                    producer.abortTransaction();
                    System.out.println("aborted " + f[1]);
                }
            }
        }
    }

    static void copy(String bootstrap, String txnId, String group, String in, String out) {
        Properties c = new Properties();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", group);
        c.put("group.protocol", "classic");
        c.put("key.deserializer", StringDeserializer.class.getName());
        c.put("value.deserializer", StringDeserializer.class.getName());
        c.put("enable.auto.commit", "false");
        c.put("isolation.level", "read_committed");
        c.put("auto.offset.reset", "earliest");
        c.put("max.poll.records", "50");
        c.put("session.timeout.ms", "6000");
        c.put("heartbeat.interval.ms", "1000");
        long copied = 0;
        long deadline = System.currentTimeMillis() + 150_000;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(c);
             KafkaProducer<String, String> producer = producer(bootstrap, txnId)) {
            consumer.subscribe(List.of(in));
            int partitions = consumer.partitionsFor(in).size();
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
                if (records.isEmpty()) {
                    if (caughtUp(consumer, partitions)) {
                        System.out.println("done");
                        return;
                    }
                    continue;
                }
                producer.beginTransaction();
                try {
                    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                    for (ConsumerRecord<String, String> r : records) {
                        producer.send(new ProducerRecord<>(out, r.partition(), r.key(), "copy:" + r.value()));
                        offsets.put(new TopicPartition(r.topic(), r.partition()),
                            new OffsetAndMetadata(r.offset() + 1));
                    }
                    producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
                    producer.commitTransaction();
                } catch (ProducerFencedException e) {
                    throw e;
                } catch (KafkaException e) {
                    System.out.println("aborting " + e);
                    producer.abortTransaction();
                    rewind(consumer);
                    continue;
                }
                copied += records.count();
                System.out.println("progress " + copied);
            }
            System.out.println("timeout");
        }
    }

    static boolean caughtUp(KafkaConsumer<String, String> consumer, int partitions) {
        Set<TopicPartition> owned = consumer.assignment();
        if (owned.size() < partitions) {
            return false;
        }
        try {
            Map<TopicPartition, Long> ends = consumer.endOffsets(owned);
            for (TopicPartition tp : owned) {
                if (consumer.position(tp) < ends.get(tp)) {
                    return false;
                }
            }
        } catch (KafkaException e) {
            return false; // a broker going away: ask again on the next empty poll
        }
        return true;
    }

    static void rewind(KafkaConsumer<String, String> consumer) {
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(consumer.assignment());
        for (TopicPartition tp : consumer.assignment()) {
            OffsetAndMetadata o = committed.get(tp);
            if (o == null) {
                consumer.seekToBeginning(List.of(tp));
            } else {
                consumer.seek(tp, o.offset());
            }
        }
    }
}
