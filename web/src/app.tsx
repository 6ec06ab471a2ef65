// The application's frame: sign-in when signed out, otherwise the header and the page of the address. The
// paths are WebODM's where it has them (/dashboard/, /map/project/{pid}/task/{tid}/, /3d/project/{pid}/task/{tid}/),
// so that links people already share keep working. A public task's pages (/public/task/{id}/...) are seen by
// anyone, signed in or not. Map and 3D code load only when opened.
import { ErrorBoundary, LocationProvider, Route, Router, lazy, useLocation } from 'preact-iso';
import { session } from './api.ts';
import { Header } from './components/header.tsx';
import { Dashboard } from './pages/dashboard.tsx';
import { NotFound } from './pages/not-found.tsx';
import { PublicTaskPage, parsePublicPath } from './pages/public-task.tsx';
import { SignIn } from './pages/sign-in.tsx';
import { TaskPage } from './pages/task.tsx';

const MapPage = lazy(() => import('./map/map-page.tsx'));
const ModelPage = lazy(() => import('./viewer3d/model-page.tsx'));
const AdminPage = lazy(() => import('./pages/admin.tsx'));
const GcpPage = lazy(() => import('./gcp/gcp-page.tsx'));

export function App() {
  if (parsePublicPath(location.pathname)) {
    return (
      <LocationProvider>
        <ErrorBoundary>
          <PublicRoutes />
        </ErrorBoundary>
      </LocationProvider>
    );
  }
  if (!session.value) return <SignIn />;
  return (
    <LocationProvider>
      <Header />
      <main id="main">
        <ErrorBoundary>
          <Router>
            <Route path="/" component={Dashboard} />
            <Route path="/dashboard/" component={Dashboard} />
            <Route path="/project/:pid/task/:tid/" component={TaskPage} />
            <Route path="/map/project/:pid/" component={MapPage} />
            <Route path="/map/project/:pid/task/:tid/" component={MapPage} />
            <Route path="/3d/project/:pid/task/:tid/" component={ModelPage} />
            <Route path="/gcp/project/:pid/task/:tid/" component={GcpPage} />
            <Route path="/admin/:section?/" component={AdminPage} />
            <Route default component={NotFound} />
          </Router>
        </ErrorBoundary>
      </main>
    </LocationProvider>
  );
}

/** The public pages, followed as their links move between them; any other address is loaded as a page of its own. */
function PublicRoutes() {
  const { path } = useLocation();
  const shared = parsePublicPath(path);
  if (!shared) {
    location.assign(path);
    return null;
  }
  return <PublicTaskPage key={path} {...shared} />;
}
