/* Offline stand-ins for what pkgdown.js does with CDN libraries (see
   templates/head.html): the page's table of contents and the navbar search
   over the site's search.json. Plain DOM, no library. */
document.addEventListener("DOMContentLoaded", function () {
  var toc = document.getElementById("toc");
  if (toc) {
    var list = document.createElement("ul");
    list.className = "nav nav-pills flex-column";
    document.querySelectorAll("main h2[id], main .section.level2[id] > h2, main h3[id]").forEach(function (h) {
      if (h.hasAttribute("data-toc-skip")) return;
      var id = h.id || (h.parentElement && h.parentElement.id);
      if (!id) return;
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.className = "nav-link" + (h.tagName === "H3" ? " ms-3" : "");
      link.href = "#" + id;
      link.textContent = h.textContent.trim();
      item.appendChild(link);
      list.appendChild(item);
    });
    if (list.children.length) toc.appendChild(list);
  }

  var input = document.getElementById("search-input");
  if (!input) return;
  var index = null;
  var indexUrl = new URL(input.getAttribute("data-search-index"), document.baseURI);
  var menu = document.createElement("div");
  menu.id = "search-results";
  menu.className = "dropdown-menu show";
  menu.style.display = "none";
  menu.style.maxHeight = "70vh";
  menu.style.overflowY = "auto";
  input.parentElement.style.position = "relative";
  input.parentElement.appendChild(menu);
  input.form.addEventListener("submit", function (e) { e.preventDefault(); });

  function show(query) {
    var q = query.trim().toLowerCase();
    menu.innerHTML = "";
    if (q.length < 2 || !index) { menu.style.display = "none"; return; }
    var hits = index.filter(function (e) {
      return [e.title, e.what, e.text, e.code].some(function (f) {
        return f && String(f).toLowerCase().indexOf(q) !== -1;
      });
    }).slice(0, 20);
    hits.forEach(function (e) {
      var a = document.createElement("a");
      a.className = "dropdown-item";
      // search.json's paths start at the site's root ("/reference/x.html"); the
      // site may live in a folder (r/ of the Python site): resolve them against
      // the folder of search.json itself.
      a.href = new URL(e.path.replace(/^\//, ""), indexUrl).href + (e.id ? "#" + e.id : "");
      a.textContent = e.title + (e.what && e.what !== e.title ? " > " + e.what : "");
      menu.appendChild(a);
    });
    if (!hits.length) {
      var none = document.createElement("span");
      none.className = "dropdown-item-text";
      none.textContent = "No results found.";
      menu.appendChild(none);
    }
    menu.style.display = "block";
  }

  input.addEventListener("input", function () {
    if (index) { show(input.value); return; }
    fetch(indexUrl)
      .then(function (r) { return r.json(); })
      .then(function (data) { index = data; show(input.value); });
  });
});
