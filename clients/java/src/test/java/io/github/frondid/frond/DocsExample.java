package io.github.frondid.frond;

import io.github.frondid.frond.FrondClient;
import io.github.frondid.frond.FrondException;
import io.github.frondid.frond.Snowflake;
import java.util.List;

/**
 * docs/clients.md's Java snippet, word for word (the repository's
 * TestDocs_GoSnippetsAreCode checks that it is here): compiled with the
 * tests, not run (its servers are the docs').
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
        Snowflake.Parts p = Snowflake.TWITTER.decode(flakes[0]);  // time, node, sequence
        ids.close();
        return new Object[] {id, next, batch, u7, u5, users, pay, p};
    }
}
