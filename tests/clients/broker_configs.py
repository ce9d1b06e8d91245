"""confluent-kafka's AdminClient on broker configuration (KIP-226), for the dynamic broker
configuration tests.

usage:
  broker_configs.py describe BOOTSTRAP BROKER KEY...
      one JSON line: {key: {"value", "source", "read_only", "sensitive"}} of broker BROKER (an
      id, or "" for the cluster-wide defaults); confluent-kafka keeps synonyms by name, so one
      per name, which is why the tests read the layered synonyms from kafka-configs
  broker_configs.py alter BOOTSTRAP BROKER [--validate-only] KEY=VALUE...
      an IncrementalAlterConfigs SET of each pair (APPEND for +KEY=VALUE, SUBTRACT for
      -KEY=VALUE); prints "ok" or "error: <the broker's words>"
"""
import json
import sys

from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ConfigSource, ResourceType)

mode, bootstrap, broker = sys.argv[1:4]
rest = sys.argv[4:]
admin = AdminClient({"bootstrap.servers": bootstrap})
resource = ConfigResource(ResourceType.BROKER, broker)

if mode == "describe":
    (entries,) = [f.result(timeout=30) for f in admin.describe_configs([resource]).values()]
    out = {}
    for key in rest:
        e = entries.get(key)
        if e is None:
            out[key] = None
            continue
        out[key] = {
            "value": e.value,
            "source": ConfigSource(e.source).name,
            "read_only": e.is_read_only,
            "sensitive": e.is_sensitive,
        }
    print(json.dumps(out))
elif mode == "alter":
    validate_only = "--validate-only" in rest
    ops = {"+": AlterConfigOpType.APPEND, "-": AlterConfigOpType.SUBTRACT}
    entries = []
    for a in rest:
        if a == "--validate-only":
            continue
        op = ops.get(a[0], AlterConfigOpType.SET)
        k, v = a.lstrip("+-").split("=", 1)
        entries.append(ConfigEntry(k, v, incremental_operation=op))
    resource = ConfigResource(ResourceType.BROKER, broker, incremental_configs=entries)
    try:
        for f in admin.incremental_alter_configs([resource], validate_only=validate_only).values():
            f.result(timeout=30)
        print("ok")
    except Exception as e:  # the broker's refusal, as the client raises it
        print("error: " + str(e))
else:
    sys.exit("unknown mode " + mode)
