/** Reading one row of a project by its id. */
import type { SelectQueryBuilder } from "kysely";
import type { DB } from "./schema.ts";

/** Tables whose rows each belong to one project and are named by an `id`. */
type ProjectTable = "plans" | "account_plans" | "transactions" | "webhooks";

/**
 * `rows` narrowed to the row named `id` if it is the project's: another project's row is not
 * found, as if it did not exist.
 */
export function projectRow<T extends ProjectTable>(
  rows: SelectQueryBuilder<DB, T, object>,
  projectId: string,
  id: string,
): SelectQueryBuilder<DB, T, object> {
  const ofProjects: SelectQueryBuilder<DB, ProjectTable, object> = rows;
  return ofProjects.where("id", "=", id).where("project_id", "=", projectId);
}
