"""kazoo, ZooKeeper's Python client, reading one node: what any reader of the ensemble sees.

usage: zk_read.py CONNECT PATH   (CONNECT as zookeeper.connect, with its chroot)
prints the node's data as text
"""
import sys

from kazoo.client import KazooClient

connect, path = sys.argv[1:3]
zk = KazooClient(hosts=connect, timeout=20)
zk.start(timeout=20)
try:
    data, _ = zk.get(path)
    sys.stdout.write(data.decode())
finally:
    zk.stop()
