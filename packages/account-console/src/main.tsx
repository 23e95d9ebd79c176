/**
 * Keycloak's account console as Keycloak mounts it: the environment the server injects into the page (a JSON script
 * tag), i18next loading the messages from the server in the user's locale, and the console's pages under a browser
 * router rooted at the console's address, with KeycloakProvider (keycloak-js, PKCE S256, the realm's
 * account-console client) around the page frame (masthead, menu) and the page.
 */
import '@patternfly/react-core/dist/styles/base.css';
import '@patternfly/patternfly/patternfly-addons.css';
import 'realmgate-ui-package-styles';
import 'realmgate-ui-shared-styles';
import { Header, KeycloakProvider, PageNav, routes, type AccountEnvironment } from '@keycloak/keycloak-account-ui';
import { Page, Spinner } from '@patternfly/react-core';
import i18next from 'i18next';
import FetchBackend from 'i18next-fetch-backend';
import { StrictMode, Suspense } from 'react';
import { createRoot } from 'react-dom/client';
import { initReactI18next } from 'react-i18next';
import { createBrowserRouter, Outlet, RouterProvider } from 'react-router-dom';

const environment = JSON.parse(document.getElementById('environment')?.textContent ?? '{}') as AccountEnvironment;

await i18next
  .use(FetchBackend)
  .use(initReactI18next)
  .init({
    lng: environment.locale || 'en',
    fallbackLng: 'en',
    nsSeparator: false,
    interpolation: { escapeValue: false },
    backend: {
      // The server answers Keycloak's message list: [{ key, value }, ...].
      loadPath: `${environment.serverBaseUrl}/resources/${encodeURIComponent(environment.realm)}/account/{{lng}}`,
      parse: (data: string) => Object.fromEntries((JSON.parse(data) as { key: string; value: string }[]).map(({ key, value }) => [key, value])),
    },
  });

/** The frame of every page: masthead (user menu, back to the referring application), the menu, the page. */
const Frame = () => (
  <Page header={<Header />} sidebar={<PageNav />} isManagedSidebar>
    <Suspense fallback={<Spinner />}>
      <Outlet />
    </Suspense>
  </Page>
);

const router = createBrowserRouter([{ path: decodeURIComponent(new URL(environment.baseUrl).pathname), element: <Frame />, children: routes }]);

createRoot(document.getElementById('app')!).render(
  <StrictMode>
    <KeycloakProvider environment={environment}>
      <RouterProvider router={router} />
    </KeycloakProvider>
  </StrictMode>,
);
