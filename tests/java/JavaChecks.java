import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Entry point of the Java compatibility suite: runs groups of checks with Kafka's own Java
 * client against a broker and prints one JSON line per check on stdout.
 *
 * <p>Usage: {@code java JavaChecks GROUP[,GROUP...] key=value...}. Every run needs
 * {@code bootstrap=HOST:PORT}; groups read further options of their own (see each group's
 * {@code register}). {@code only=a,b} runs only the checks whose names start with one of the
 * prefixes, {@code timeout.ms} bounds each check (default 60000).
 *
 * <p>Output contract: each check prints exactly one line
 * {@code {"check": NAME, "ok": BOOL, "detail": TEXT, "ms": N}}; a check that throws or
 * outlives its timeout prints {@code "ok": false} with the exception in the detail. Other
 * lines a group prints are JSON objects with an {@code "event"} key (progress reports). The
 * process exits 0 once every check has reported, 2 on bad arguments.
 */
public final class JavaChecks {
    private JavaChecks() {}

    public static void main(String[] args) throws Exception {
        System.setOut(new PrintStream(System.out, true, StandardCharsets.UTF_8));
        if (args.length < 1) {
            System.err.println("usage: JavaChecks GROUP[,GROUP...] bootstrap=HOST:PORT [key=value...]");
            System.exit(2);
        }
        Map<String, String> options = new HashMap<>();
        for (String arg : Arrays.copyOfRange(args, 1, args.length)) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                System.err.println("not key=value: " + arg);
                System.exit(2);
            }
            options.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Ctx ctx = new Ctx(options);
        Registry registry = new Registry();
        for (String group : args[0].split(",")) {
            switch (group) {
                case "producer": ProducerChecks.register(registry, ctx); break;
                case "consumer": ConsumerChecks.register(registry, ctx); break;
                case "transactions": TransactionChecks.register(registry, ctx); break;
                case "admin": AdminChecks.register(registry, ctx); break;
                case "acl": AclChecks.register(registry, ctx); break;
                case "security": SecurityChecks.register(registry, ctx); break;
                case "cluster": ClusterChecks.register(registry, ctx); break;
                case "reassign": ReassignChecks.register(registry, ctx); break;
                default:
                    System.err.println("unknown group: " + group);
                    System.exit(2);
            }
        }
        String only = options.getOrDefault("only", "");
        long timeoutMs = Long.parseLong(options.getOrDefault("timeout.ms", "60000"));
        registry.runAll(only.isEmpty() ? List.of() : List.of(only.split(",")), timeoutMs);
        ctx.close();
        System.out.flush();
        // Client threads a timed-out check left behind must not keep the JVM alive.
        System.exit(0);
    }

    /** One check: returns a short description of what it saw, throws when something is wrong. */
    @FunctionalInterface
    interface Check {
        String run() throws Exception;
    }

    /** The checks of this run, in the order they were added. */
    static final class Registry {
        private final Map<String, Check> checks = new LinkedHashMap<>();

        void add(String name, Check check) {
            if (checks.put(name, check) != null) {
                throw new IllegalArgumentException("two checks named " + name);
            }
        }

        /** Runs each selected check on a thread of its own, one at a time, and reports it. */
        void runAll(List<String> prefixes, long timeoutMs) {
            ExecutorService pool = Executors.newCachedThreadPool(r -> {
                Thread t = new Thread(r, "check");
                t.setDaemon(true);
                return t;
            });
            for (Map.Entry<String, Check> entry : checks.entrySet()) {
                String name = entry.getKey();
                if (!prefixes.isEmpty() && prefixes.stream().noneMatch(name::startsWith)) {
                    continue;
                }
                long start = System.nanoTime();
                Future<String> future = pool.submit(entry.getValue()::run);
                boolean ok;
                String detail;
                try {
                    detail = future.get(timeoutMs, TimeUnit.MILLISECONDS);
                    ok = true;
                } catch (TimeoutException e) {
                    future.cancel(true);
                    ok = false;
                    detail = "timed out after " + timeoutMs + " ms";
                } catch (ExecutionException e) {
                    ok = false;
                    detail = describe(e.getCause());
                } catch (InterruptedException e) {
                    ok = false;
                    detail = "interrupted";
                }
                long ms = (System.nanoTime() - start) / 1_000_000;
                Json.line("check", name, "ok", ok, "detail", detail == null ? "" : detail, "ms", ms);
            }
            pool.shutdownNow();
        }
    }

    /**
     * An exception as one line: its class and message, then its causes ({@code <- ...}), then
     * where in these sources it was thrown unless it is a failed expectation.
     */
    static String describe(Throwable error) {
        StringBuilder out = new StringBuilder();
        List<Throwable> seen = new ArrayList<>();
        for (Throwable t = error; t != null && !seen.contains(t) && seen.size() < 6; t = t.getCause()) {
            if (!seen.isEmpty()) {
                out.append(" <- ");
            }
            seen.add(t);
            if (t instanceof Failed) {
                out.append(t.getMessage());
            } else {
                out.append(t.getClass().getName()).append(": ").append(t.getMessage());
            }
        }
        if (!(error instanceof Failed)) {
            for (Throwable t : seen) {
                for (StackTraceElement frame : t.getStackTrace()) {
                    if (!frame.getClassName().contains(".")) { // our classes live in the default package
                        out.append(" (at ").append(frame.getClassName()).append('.')
                                .append(frame.getMethodName()).append(':').append(frame.getLineNumber())
                                .append(')');
                        return out.toString();
                    }
                }
            }
        }
        return out.toString();
    }

    /** A check's expectation that did not hold; its message is the whole detail. */
    static final class Failed extends Exception {
        private static final long serialVersionUID = 1L;

        Failed(String message) {
            super(message);
        }
    }

    /** Throws {@link Failed} with the formatted message unless {@code condition} holds. */
    static void expect(boolean condition, String format, Object... args) throws Failed {
        if (!condition) {
            throw new Failed(String.format(format, args));
        }
    }

    /** Writes JSON objects, one per line, escaping every string so the line stays ASCII. */
    static final class Json {
        private Json() {}

        /** Prints one object from alternating keys and values (String, Boolean, Number or null). */
        static synchronized void line(Object... keysAndValues) {
            StringBuilder out = new StringBuilder("{");
            for (int i = 0; i < keysAndValues.length; i += 2) {
                if (i > 0) {
                    out.append(", ");
                }
                out.append(string(String.valueOf(keysAndValues[i]))).append(": ");
                out.append(value(keysAndValues[i + 1]));
            }
            System.out.println(out.append('}'));
        }

        static String value(Object v) {
            if (v == null) {
                return "null";
            }
            if (v instanceof Boolean || v instanceof Integer || v instanceof Long) {
                return v.toString();
            }
            return string(v.toString());
        }

        /** A JSON string literal; control and non-ASCII characters become {@code \\uXXXX}. */
        static String string(String s) {
            StringBuilder out = new StringBuilder(s.length() + 2).append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                switch (c) {
                    case '"': out.append("\\\""); break;
                    case '\\': out.append("\\\\"); break;
                    case '\n': out.append("\\n"); break;
                    case '\r': out.append("\\r"); break;
                    case '\t': out.append("\\t"); break;
                    default:
                        if (c < 0x20 || c > 0x7e) {
                            out.append(String.format("\\u%04x", (int) c));
                        } else {
                            out.append(c);
                        }
                }
            }
            return out.append('"').toString();
        }
    }
}
