/**
 * Dropping a throwaway database of the scripts' PostgreSQL cluster (scripts/pg-cluster.sh).
 */
import pg from "pg";

/**
 * Drops database `name` of the cluster at `adminUrl`. `WITH (FORCE)` ends the ledger's own
 * sessions, but PostgreSQL refuses to end one of the cluster's own (an autovacuum worker that
 * has just started on the fresh tables): that refusal is retried for a few seconds, and a
 * database still left after that stays behind in the throwaway cluster, with a warning, rather
 * than fail the run.
 */
export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const client = new pg.Client({ connectionString: adminUrl });
    try {
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      return;
    } catch (err) {
      if (attempt >= 10) {
        process.stderr.write(`database ${name} left behind: ${(err as Error).message}\n`);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, 200 * attempt));
    } finally {
      await client.end().catch(() => {});
    }
  }
}
