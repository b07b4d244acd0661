import java.util.Map;

import org.apache.kafka.clients.admin.Admin;

/** A run's options and its connection to the broker named by {@code bootstrap=}. */
final class Ctx implements AutoCloseable {
    final Map<String, String> options;
    final Conn conn;
    private Admin admin;

    Ctx(Map<String, String> options) {
        this.options = options;
        this.conn = Conn.plaintext(option("bootstrap"));
    }

    /** A required option; a missing one is a usage error of the caller. */
    String option(String key) {
        String value = options.get(key);
        if (value == null) {
            throw new IllegalArgumentException("missing option " + key + "=...");
        }
        return value;
    }

    /** One Admin client shared by the checks of the run (closed at the end). */
    synchronized Admin admin() {
        if (admin == null) {
            admin = conn.admin();
        }
        return admin;
    }

    @Override
    public synchronized void close() {
        if (admin != null) {
            admin.close(java.time.Duration.ofSeconds(5));
        }
    }
}
