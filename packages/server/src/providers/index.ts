export { builtinProviders } from './builtin.js';
export { providerContext } from './context.js';
export { loadProviderPackages, type LoadedPackage } from './loader.js';
export { mountRealmResources, resourceRequest, sendResourceResponse } from './realm-resources.js';
export { ProviderRegistry, type ProviderEntry } from './registry.js';
