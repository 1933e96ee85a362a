/**
 * Sign in: one field, `API key`, and a `Sign in` button. The key is checked with a call to the
 * API (`GET /v1/accounts?limit=1`); a refused key shows the API's error and the form stays.
 */
import { useState } from "hono/jsx/dom";
import { type ApiError, call } from "../api.ts";
import { ErrorMessage } from "../components.tsx";

export function SignIn({ onSignedIn }: { onSignedIn: (key: string) => void }) {
  const [error, setError] = useState<ApiError | Error | undefined>(undefined);
  const [busy, setBusy] = useState(false);

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const input = form.elements.namedItem("apiKey") as HTMLInputElement;
    const key = input.value.trim();
    if (key === "") return;
    setBusy(true);
    setError(undefined);
    try {
      await call("GET", "v1/accounts", { query: { limit: 1 }, key });
      input.value = "";
      onSignedIn(key);
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Credit Ledger console</h1>
      <form onSubmit={submit} autocomplete="off">
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="apiKey"
          type="password"
          autocomplete="off"
          spellcheck={false}
          required
        />
        <button type="submit" disabled={busy}>
          Sign in
        </button>
        <ErrorMessage error={error} />
        <p class="muted">
          The key is kept in this tab only (its session storage) and sent to this service's API.
        </p>
      </form>
    </main>
  );
}
