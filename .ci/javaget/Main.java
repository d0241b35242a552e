// A Java program outside frond's repository, compiled by .ci/run against
// the built jar alone (clients/java/build/frond-client.jar), as a user's:
// it takes segment IDs from a lease and a snowflake ID from the running
// frond serve whose address is its argument, and prints them.
import io.github.frondid.frond.FrondClient;
import io.github.frondid.frond.Snowflake;

public class Main {
    public static void main(String[] args) {
        try (FrondClient ids = FrondClient.builder().servers(args[0]).build()) {
            ids.createTag("order", 1000, "");
            long a = ids.nextId("order"), b = ids.nextId("order");
            long sf = ids.snowflake();
            if (a != 1 || b != 2) {
                throw new IllegalStateException("segment IDs " + a + ", " + b);
            }
            System.out.println("segment IDs " + a + ", " + b + "; snowflake " + sf + " = " + Snowflake.TWITTER.decode(sf));
        }
    }
}
