// Style sheets are imported for their effect only; Vite bundles them.
declare module '*.css';
declare module 'realmgate-ui-shared-styles';
declare module 'realmgate-ui-package-styles';
