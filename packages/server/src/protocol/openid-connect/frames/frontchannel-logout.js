// The front-channel logout page: once every client's logout frame has loaded (the document is complete), go on to
// the client's post-logout redirect (the page's "Continue" link).
document.addEventListener('readystatechange', function () {
  if (document.readyState !== 'complete') return;
  var next = document.getElementById('continue');
  if (next) window.location.replace(next.href);
});
