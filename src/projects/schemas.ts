/**
 * zod schemas of the project and its credit price (docs/api.md#charging-usage-in-credits), and
 * the mapper of a stored project to the API's Project object.
 */
import { z } from "@hono/zod-openapi";
import { iso } from "../dates.ts";
import type { ProjectsTable } from "../db/schema.ts";
import { ex } from "../http/examples.ts";
import { creditAmount } from "../http/schemas.ts";
import { fromMicros } from "../money.ts";
import type { WireOf } from "../wire.ts";

const exampleProject = {
  id: ex.projectId,
  name: "default",
  creditsPerUsd: 100,
  createdAt: "2026-11-21T08:00:00.000Z",
  stripe: { connected: true, secretKeySet: false },
};

export const projectSchema = z
  .object({
    id: z.string().openapi({ example: ex.projectId }),
    name: z.string().openapi({ example: "default" }),
    creditsPerUsd: z.number().nullable().openapi({
      description:
        "Credits charged per USD of model cost (at most 6 decimals); null until set, and then usage cannot be charged in credits",
      example: 100,
    }),
    createdAt: z.string().openapi({ example: exampleProject.createdAt }),
    stripe: z
      .object({
        connected: z.boolean().openapi({ description: "A webhook secret is set" }),
        secretKeySet: z.boolean().openapi({ description: "A secret key is set" }),
      })
      .openapi({
        description:
          "The project's Stripe connection, set by the operator (`ledger stripe set`); the " +
          "secrets are never shown",
      }),
  })
  .openapi("Project", { example: exampleProject });

/** The API's Project object. */
export function projectJson(
  row: Pick<ProjectsTable, "id" | "name" | "created_at_ms" | "credits_per_usd_micros"> & {
    stripe_connected: number | boolean;
    stripe_key_set: number | boolean;
  },
): WireOf<typeof projectSchema> {
  return {
    id: row.id,
    name: row.name,
    creditsPerUsd:
      row.credits_per_usd_micros === null ? null : fromMicros(row.credits_per_usd_micros),
    createdAt: iso(row.created_at_ms),
    stripe: { connected: Boolean(row.stripe_connected), secretKeySet: Boolean(row.stripe_key_set) },
  };
}

export const getProjectQuery = z.object({});

export const updateProjectBody = z
  .object({
    creditsPerUsd: creditAmount().nullable().openapi({
      description:
        "Credits per USD of model cost: > 0, at most 6 decimals, at most 1e9; null unsets it",
      example: 100,
    }),
  })
  .openapi("UpdateProjectRequest", { example: { creditsPerUsd: 100 } });

export const projectResponse = z
  .object({ success: z.literal(true), project: projectSchema })
  .openapi({ example: { success: true as const, project: exampleProject } });
