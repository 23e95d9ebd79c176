/**
 * Keycloak's admin console as Keycloak mounts it: the environment the server injects into the page (a JSON script
 * tag, read by the console's library too), i18next loading the messages from the server, and the console's routes
 * under a hash router with KeycloakProvider (keycloak-js, PKCE) around the console's own App.
 */
import '@patternfly/react-core/dist/styles/base.css';
import '@patternfly/patternfly/patternfly-addons.css';
import '@keycloak/keycloak-admin-ui/styles.css';
import 'realmgate-ui-shared-styles';
import { AdminUi, KeycloakProvider, routes, type AdminEnvironment } from '@keycloak/keycloak-admin-ui';
import i18next from 'i18next';
import FetchBackend from 'i18next-fetch-backend';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { initReactI18next } from 'react-i18next';
import { createHashRouter, RouterProvider } from 'react-router-dom';

const environment = JSON.parse(document.getElementById('environment')?.textContent ?? '{}') as AdminEnvironment;

await i18next
  .use(FetchBackend)
  .use(initReactI18next)
  .init({
    fallbackLng: 'en',
    keySeparator: '.',
    nsSeparator: false,
    interpolation: { escapeValue: false },
    returnObjects: true,
    backend: {
      // The server answers Keycloak's message list: [{ key, value }, ...].
      loadPath: `${environment.serverBaseUrl}/resources/${encodeURIComponent(environment.realm)}/admin/{{lng}}`,
      parse: (data: string) => Object.fromEntries((JSON.parse(data) as { key: string; value: string }[]).map(({ key, value }) => [key, value])),
    },
  });

const router = createHashRouter([
  {
    path: '/',
    element: (
      <KeycloakProvider environment={environment}>
        <AdminUi />
      </KeycloakProvider>
    ),
    children: routes,
  },
]);

createRoot(document.getElementById('app')!).render(
  <StrictMode>
    <RouterProvider router={router} />
  </StrictMode>,
);
