import java.util.*;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.quota.*;

/**
 * The Java AdminClient's quota calls against a broker: usage
 * AdminQuotas BOOTSTRAP set|remove|describe [TYPE NAME|TYPE -] ... [key=value|key ...]
 * Entity parts come in pairs (`client-id slow`, `user -` for the default); then the ops: for
 * set, key=value; for remove, keys. describe prints one line per entity: `ENTITY key=value ...`.
 * AdminQuotas BOOTSTRAP storm PREFIX N PARTITIONS: as client id `storm`, one CreateTopics of N
 * topics without retrying on quota violations; prints `TOPIC created` or `TOPIC EXCEPTION`.
 */
public class AdminQuotas {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        String mode = args[1];
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, mode.equals("storm") ? "storm" : "admin-quotas");
        Map<String, String> entity = new LinkedHashMap<>();
        int i = 2;
        while (i + 1 < args.length && Arrays.asList("user", "client-id", "ip").contains(args[i])) {
            entity.put(args[i], args[i + 1].equals("-") ? null : args[i + 1]);
            i += 2;
        }
        try (Admin admin = Admin.create(props)) {
            if (mode.equals("storm")) {
                List<NewTopic> topics = new ArrayList<>();
                for (int t = 0; t < Integer.parseInt(args[3]); t++) {
                    topics.add(new NewTopic(args[2] + "-" + t, Integer.parseInt(args[4]), (short) 1));
                }
                CreateTopicsResult r = admin.createTopics(topics,
                    new CreateTopicsOptions().retryOnQuotaViolation(false));
                for (NewTopic t : topics) {
                    try {
                        r.values().get(t.name()).get();
                        System.out.println(t.name() + " created");
                    } catch (java.util.concurrent.ExecutionException e) {
                        System.out.println(t.name() + " " + e.getCause().getClass().getSimpleName());
                    }
                }
                return;
            }
            if (mode.equals("describe")) {
                List<ClientQuotaFilterComponent> parts = new ArrayList<>();
                for (Map.Entry<String, String> e : entity.entrySet()) {
                    parts.add(e.getValue() == null
                        ? ClientQuotaFilterComponent.ofDefaultEntity(e.getKey())
                        : ClientQuotaFilterComponent.ofEntity(e.getKey(), e.getValue()));
                }
                Map<ClientQuotaEntity, Map<String, Double>> all = admin
                    .describeClientQuotas(ClientQuotaFilter.contains(parts)).entities().get();
                List<String> lines = new ArrayList<>();
                for (Map.Entry<ClientQuotaEntity, Map<String, Double>> e : all.entrySet()) {
                    StringBuilder b = new StringBuilder();
                    b.append(new TreeMap<>(e.getKey().entries()));
                    for (Map.Entry<String, Double> v : new TreeMap<>(e.getValue()).entrySet()) {
                        b.append(' ').append(v.getKey()).append('=').append(v.getValue());
                    }
                    lines.add(b.toString());
                }
                Collections.sort(lines);
                lines.forEach(System.out::println);
                return;
            }
            List<ClientQuotaAlteration.Op> ops = new ArrayList<>();
            for (; i < args.length; i++) {
                if (mode.equals("set")) {
                    String[] kv = args[i].split("=", 2);
                    ops.add(new ClientQuotaAlteration.Op(kv[0], Double.parseDouble(kv[1])));
                } else {
                    ops.add(new ClientQuotaAlteration.Op(args[i], null));
                }
            }
            ClientQuotaAlteration alteration =
                new ClientQuotaAlteration(new ClientQuotaEntity(entity), ops);
            try {
                admin.alterClientQuotas(Collections.singleton(alteration)).all().get();
                System.out.println("altered");
            } catch (java.util.concurrent.ExecutionException e) {
                System.out.println("refused " + e.getCause().getClass().getSimpleName() + ": "
                    + e.getCause().getMessage());
            }
        }
    }
}
