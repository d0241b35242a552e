package io.github.frondid.frond;

import io.github.frondid.frond.FrondClient;
import io.github.frondid.frond.FrondException;
import io.github.frondid.frond.SeqValues;
import io.github.frondid.frond.Shards;
import io.github.frondid.frond.Snowflake;
import java.time.Instant;
import java.util.List;

/**
 * docs/clients.md's and clients/java/README.md's Java snippets, word for
 * word (the repository's TestDocs_GoSnippetsAreCode checks that they are
 * here): compiled with the tests; usage is not run (its servers are the
 * docs'), route and genes are (ShardTest).
 */
final class DocsExample {
    private DocsExample() {
    }

    static Object[] usage() throws FrondException {
        FrondClient ids = FrondClient.builder()
                .servers("http://id-1:8080", "http://id-2:8080")   // or "id-1:8080"
                .build();                                           // keep one per application

        long id = ids.nextId("order");                // from the lease: no network call
        FrondClient.Tag order = ids.tag("order");     // a handle: skips the tag lookup
        long next = order.next();
        long[] batch = ids.nextIds("order", 100);     // in order
        long[] flakes = ids.snowflake(10);            // per call
        List<String> u7 = ids.uuids(7, 3);            // versions 1, 4, 6, 7
        String u5 = ids.nameUuid(5, "dns", "example.com");
        List<String> users = ids.typeIds("user", 2);  // user_01h455vb4pex5vsknk084sn02q
        List<String> pay = ids.serials("pay", 1);     // a serial configured on the servers
        SeqValues v = ids.seq("msgs", "conversation-42", 3);     // keyed sequence values: v.first .. v.last
        Snowflake.Parts p = Snowflake.TWITTER.decode(flakes[0]);  // time, node, sequence
        ids.close();
        return new Object[] {id, next, batch, u7, u5, users, pay, v.first, v.last, p};
    }

    // Routing by id % 2 (tags users and orders with mapping shard:1): a
    // user and the user's orders on one of two databases.
    static Object[] route(FrondClient ids, String[] databases) throws FrondException {
        String userKey = "user-42";
        long userId = ids.nextForKey("users", userKey);      // userId % 2 == Shards.shardOf(userKey, 1)
        long orderId = ids.nextForKey("orders", userKey);    // orderId % 2 == userId % 2: the user's shard
        String db = databases[(int) (orderId % 2)];          // the user and the user's orders meet on one database
        return new Object[] {userId, orderId, db};
    }

    // Shard bits of a tag (orders: mapping shard:4) and of snowflake IDs,
    // compose and bounds, offline.
    static Object[] genes(FrondClient ids) throws FrondException {
        long id = ids.nextShard("orders", 13);                          // id % 16 == 13
        long shard = Shards.shardOf("user-42", 4);                      // 13: the shard every frond gives the key
        long same = ids.nextForKey("orders", "user-42");                // same % 16 == 13
        Snowflake.Layout sharded = Snowflake.TWITTER.withShardBits(4);  // snowflake.shard_bits: 4
        long flake = sharded.compose(Instant.parse("2026-11-29T12:00:00Z"), 5, 0, shard);
        Snowflake.Parts p = sharded.decode(flake);                      // node 5, sequence 0, shard 13
        Snowflake.Bounds day = Snowflake.TWITTER.bounds(Instant.parse("2026-11-29T00:00:00Z"), Instant.parse("2026-11-30T00:00:00Z"));
        // WHERE id BETWEEN day.first AND day.last: every twitter-layout ID of that day
        return new Object[] {id, shard, same, flake, p, day};
    }
}
