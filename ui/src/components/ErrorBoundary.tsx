import {Component, type ErrorInfo, type ReactNode} from 'react';

/**
 * A page that throws while rendering (an answer of an unexpected shape) shows the error as text
 * instead of blanking the console; the navigation stays usable. Keyed by route by its parent, so
 * another page starts afresh.
 */
export class ErrorBoundary extends Component<{children: ReactNode}, {error: Error | null}> {
  override state: {error: Error | null} = {error: null};

  static getDerivedStateFromError(error: Error): {error: Error} {
    return {error};
  }

  override componentDidCatch(error: Error, info: ErrorInfo): void {
    console.error('console page failed', error, info.componentStack);
  }

  override render(): ReactNode {
    if (this.state.error)
      return (
        <div role="alert" className="error">
          This page could not be shown: {this.state.error.message}
        </div>
      );
    return this.props.children;
  }
}
