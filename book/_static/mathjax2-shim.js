// The Jupyter widgets HTML manager typesets widget labels through MathJax 2's API
// (MathJax.Hub.Queue); the book loads MathJax 3. Translate the one call it makes.
(function () {
  var mj = window.MathJax;
  if (!mj || mj.Hub || !mj.startup) return;
  mj.Hub = {
    Queue: function () {
      for (var i = 0; i < arguments.length; i++) {
        var a = arguments[i];
        if (Array.isArray(a) && a[0] === "Typeset") {
          var el = a[2];
          mj.startup.promise.then(function () { return mj.typesetPromise(el ? [el] : undefined); })
            .catch(function () {});
        } else if (typeof a === "function") {
          mj.startup.promise.then(a);
        }
      }
    }
  };
})();
