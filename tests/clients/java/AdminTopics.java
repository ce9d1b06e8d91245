// The official Java client's Admin (kafka-clients) against gregor: creates topics (a count and
// a replication factor with a config, and an explicit assignment), lists and describes them,
// adds partitions and deletes, and tries the requests that must fail; then describes a topic's
// configuration and the cluster.
//   java -cp <jars>:. AdminTopics <bootstrap> <prefix>
// Prints one line per operation: "<op> <topic> ok" or "<op> <topic> <exception class>",
// and "describe <topic> <partitions> <replicas of partition 0>" after each change.

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;

public class AdminTopics {
    static void report(String op, String topic, KafkaFuture<?> f) throws InterruptedException {
        try {
            f.get();
            System.out.println(op + " " + topic + " ok");
        } catch (ExecutionException e) {
            System.out.println(op + " " + topic + " " + e.getCause().getClass().getSimpleName());
        }
    }

    static void describe(Admin admin, String topic) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        System.out.println("describe " + topic + " " + d.partitions().size() + " "
                + d.partitions().get(0).replicas().size());
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], p = args[1];
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("request.timeout.ms", "20000");
        props.put("default.api.timeout.ms", "40000");
        try (Admin admin = Admin.create(props)) {
            String a = p + "-a", b = p + "-b";
            NewTopic na = new NewTopic(a, 3, (short) 2)
                    .configs(Map.of("message.timestamp.type", "LogAppendTime"));
            report("create", a, admin.createTopics(List.of(na)).all());
            describe(admin, a);
            NewTopic nb = new NewTopic(b, Map.of(0, List.of(1, 2), 1, List.of(2, 3)));
            report("create", b, admin.createTopics(List.of(nb)).all());
            describe(admin, b);
            report("create", a, admin.createTopics(List.of(new NewTopic(a, 1, (short) 1))).all());
            report("create", p + "-c",
                    admin.createTopics(List.of(new NewTopic(p + "-c", 1, (short) 7))).all());
            report("create", p + "-d", admin.createTopics(List.of(new NewTopic(p + "-d", 1, (short) 1)
                    .configs(Map.of("no.such.key", "1")))).all());
            System.out.println("list " + admin.listTopics().names().get().containsAll(List.of(a, b)));
            report("partitions", a,
                    admin.createPartitions(Map.of(a, NewPartitions.increaseTo(5))).all());
            describe(admin, a);
            report("partitions", a,
                    admin.createPartitions(Map.of(a, NewPartitions.increaseTo(2))).all());
            report("delete", b, admin.deleteTopics(List.of(b)).all());
            System.out.println("list " + admin.listTopics().names().get().contains(b));
            report("delete", p + "-nope", admin.deleteTopics(List.of(p + "-nope")).all());
            ConfigResource ra = new ConfigResource(ConfigResource.Type.TOPIC, a);
            ConfigEntry ts = admin.describeConfigs(List.of(ra)).all().get().get(ra)
                    .get("message.timestamp.type");
            System.out.println("config " + a + " " + ts.name() + " " + ts.value() + " " + ts.source());
            ConfigResource rn = new ConfigResource(ConfigResource.Type.TOPIC, p + "-nope");
            report("config", p + "-nope", admin.describeConfigs(List.of(rn)).all());
            DescribeClusterResult cluster = admin.describeCluster();
            System.out.println("cluster " + cluster.nodes().get().size() + " "
                    + (cluster.controller().get().id() >= 1) + " "
                    + !cluster.clusterId().get().isEmpty());
            // A group with a committed offset, then every group: the AdminClient asks every
            // broker (ListGroups) and fails on any error.
            Properties cp = new Properties();
            cp.put("bootstrap.servers", args[0]);
            cp.put("group.id", p + "-g");
            cp.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            cp.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
            try (org.apache.kafka.clients.consumer.KafkaConsumer<byte[], byte[]> c =
                    new org.apache.kafka.clients.consumer.KafkaConsumer<>(cp)) {
                org.apache.kafka.common.TopicPartition tp = new org.apache.kafka.common.TopicPartition(a, 0);
                c.assign(List.of(tp));
                c.commitSync(java.util.Map.of(tp, new org.apache.kafka.clients.consumer.OffsetAndMetadata(1)));
            }
            java.util.TreeSet<String> groups = new java.util.TreeSet<>();
            for (var g : admin.listGroups().all().get()) {
                if (g.groupId().startsWith(p + "-")) groups.add(g.groupId());
            }
            System.out.println("groups " + String.join(" ", groups));
        }
    }
}
