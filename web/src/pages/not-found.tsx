export function NotFound() {
  return (
    <div class="page">
      <h1>Page not found</h1>
      <p>
        <a href="/dashboard/">Back to the projects</a>
      </p>
    </div>
  );
}
