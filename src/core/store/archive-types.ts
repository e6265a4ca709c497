/** The archive seam, for the importers that name this path: it lives in seams/archive.ts. */
export * from './seams/archive.js';
