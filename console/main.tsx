/**
 * The operator console (docs/operations.md#operator-console): a small client app served at
 * `GET /console` that reads and changes a project's ledger through the public `/v1` API, with
 * the API key of this tab. Pages are chosen by the URL's fragment (`#/accounts`, …), so the key
 * is never part of a URL.
 */
import "uplot/dist/uPlot.min.css";
import "./console.css";
import { render, useEffect, useState } from "hono/jsx/dom";
import { type ApiError, forgetKey, storedKey, storeKey, whenUnauthorized } from "./api.ts";
import { ErrorMessage } from "./components.tsx";
import { AccountPage } from "./pages/account.tsx";
import { AccountsPage } from "./pages/accounts.tsx";
import { ModelsPage } from "./pages/models.tsx";
import { OverviewPage } from "./pages/overview.tsx";
import { PlansPage } from "./pages/plans.tsx";
import { SignIn } from "./pages/sign-in.tsx";
import { WebhooksPage } from "./pages/webhooks.tsx";

type Route =
  | { page: "overview" }
  | { page: "accounts" }
  | { page: "plans" }
  | { page: "account"; accountId: string; transactionId?: string }
  | { page: "webhooks" }
  | { page: "models" };

function routeOf(hash: string): Route {
  const path = hash.replace(/^#\/?/, "");
  // An entry's thread in an account's ledger (pages/account-ledger.tsx).
  const entry = /^accounts\/([^/]+)\/transactions\/([^/]+)$/.exec(path);
  if (entry?.[1] && entry[2]) {
    return {
      page: "account",
      accountId: decodeURIComponent(entry[1]),
      transactionId: decodeURIComponent(entry[2]),
    };
  }
  const account = /^accounts\/(.+)$/.exec(path);
  if (account?.[1]) return { page: "account", accountId: decodeURIComponent(account[1]) };
  if (path === "overview") return { page: "overview" };
  if (path === "plans") return { page: "plans" };
  if (path === "webhooks") return { page: "webhooks" };
  if (path === "models") return { page: "models" };
  return { page: "accounts" };
}

function Page({ route }: { route: Route }) {
  switch (route.page) {
    case "account":
      return <AccountPage accountId={route.accountId} transactionId={route.transactionId} />;
    case "overview":
      return <OverviewPage />;
    case "plans":
      return <PlansPage />;
    case "webhooks":
      return <WebhooksPage />;
    case "models":
      return <ModelsPage />;
    default:
      return <AccountsPage />;
  }
}

function App() {
  const [key, setKey] = useState<string | null>(storedKey());
  const [route, setRoute] = useState<Route>(routeOf(location.hash));
  const [refused, setRefused] = useState<ApiError | undefined>(undefined);

  useEffect(() => {
    const onHash = () => setRoute(routeOf(location.hash));
    window.addEventListener("hashchange", onHash);
    // A key refused while signed in (revoked meanwhile): back to the sign-in form.
    whenUnauthorized((err) => {
      forgetKey();
      setRefused(err);
      setKey(null);
    });
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  if (key === null) {
    return (
      <>
        <ErrorMessage error={refused} />
        <SignIn
          onSignedIn={(k) => {
            storeKey(k);
            setRefused(undefined);
            setKey(k);
          }}
        />
      </>
    );
  }
  const current = route.page === "account" ? "accounts" : route.page;
  const link = (page: string, label: string) => (
    <a href={`#/${page}`} aria-current={current === page ? "page" : undefined}>
      {label}
    </a>
  );
  return (
    <>
      <header>
        <span class="brand">Credit Ledger</span>
        <nav aria-label="Console">
          {link("overview", "Overview")}
          {link("accounts", "Accounts")}
          {link("plans", "Plans")}
          {link("webhooks", "Webhooks")}
          {link("models", "Models")}
        </nav>
        <button
          type="button"
          onClick={() => {
            forgetKey();
            setKey(null);
          }}
        >
          Sign out
        </button>
      </header>
      <Page route={route} />
    </>
  );
}

const root = document.getElementById("console");
if (root) render(<App />, root);
