(function(){
"use strict";
function el(tag,cls,text){var e=document.createElement(tag);if(cls)e.className=cls;if(text!==undefined&&text!==null)e.textContent=String(text);return e;}
function disp(v){return Array.isArray(v)?v[0]:v;}
function key(v){var k=Array.isArray(v)?v[1]:v;return k===null||k===undefined?"":k;}
function cmp(a,b){if(typeof a==="number"&&typeof b==="number")return a-b;if(typeof a==="number")return -1;if(typeof b==="number")return 1;return String(a).localeCompare(String(b));}
function build(root){
  var spec=JSON.parse(document.getElementById(root.getAttribute("data-src")).textContent);
  var cols=spec.columns,rows=spec.rows,size=spec.page||50,state={sort:null,dir:1,page:0,f:{}};
  var controls=el("div","dt-controls"),table=el("table","dt-table"),pager=el("div","dt-pager");
  cols.forEach(function(c,i){
    if(!c.filter)return;
    var label=el("label",null,c.label+" ");
    var input;
    if(c.filter==="text"){input=el("input");input.type="search";input.placeholder="filter";}
    else{input=el("select");input.appendChild(el("option",null,"all"));input.options[0].value="";
      var seen={};rows.forEach(function(r){(c.filter==="tags"?(r[i]||[]):[disp(r[i])]).forEach(function(v){seen[v]=1;});});
      Object.keys(seen).sort().forEach(function(v){if(v==="")return;var o=el("option",null,v);o.value=v;input.appendChild(o);});}
    input.setAttribute("data-col",String(i));input.setAttribute("aria-label","filter by "+c.label);
    input.addEventListener("input",function(){state.f[i]=input.value;state.page=0;draw();});
    label.appendChild(input);controls.appendChild(label);
  });
  var thead=el("thead"),hr=el("tr");
  cols.forEach(function(c,i){var th=el("th",(c.num?"num ":"")+(c.nosort?"":"sortable"),c.label);
    if(!c.nosort)th.addEventListener("click",function(){if(state.sort===i)state.dir=-state.dir;else{state.sort=i;state.dir=1;}draw();});
    hr.appendChild(th);});
  thead.appendChild(hr);table.appendChild(thead);var tbody=el("tbody");table.appendChild(tbody);
  var prev=el("button",null,"‹ prev"),next=el("button",null,"next ›"),info=el("span");
  prev.addEventListener("click",function(){state.page--;draw();});next.addEventListener("click",function(){state.page++;draw();});
  pager.appendChild(prev);pager.appendChild(info);pager.appendChild(next);
  root.appendChild(controls);root.appendChild(table);root.appendChild(pager);
  function keep(r){for(var i in state.f){var want=state.f[i];if(!want)continue;var c=cols[i],v=r[i];
    if(c.filter==="text"){if(String(disp(v)).toLowerCase().indexOf(want.toLowerCase())<0)return false;}
    else if(c.filter==="tags"){if((v||[]).indexOf(want)<0)return false;}
    else if(String(disp(v))!==want)return false;}return true;}
  function cell(c,v,r){var td=el("td",c.num?"num":null);
    if(c.runs){td.className="runs";(v||[]).forEach(function(run){var st=spec.statuses[run[1]],a=el("a","s-"+st[0]);
      a.href=r[c.base]+"run-"+run[0]+spec.suffix;a.title="run "+run[0]+": "+st[1];a.setAttribute("aria-label","run "+run[0]+" "+st[1]);td.appendChild(a);});return td;}
    if(c.pick!==undefined){var box=el("input");box.type="checkbox";var name=disp(r[c.pick]);box.checked=picked.indexOf(name)>=0;
      box.setAttribute("aria-label","compare "+name);box.addEventListener("change",function(){pick(name,box.checked);});td.appendChild(box);return td;}
    if(c.tags){td.textContent=(v||[]).join(", ")||"—";return td;}
    var text=disp(v);if(text===null||text===undefined)text="n/a";
    var href=c.href!==undefined?r[c.href]:null;
    if(href){var a=el("a",null,text);a.href=href;td.appendChild(a);}else td.textContent=String(text);
    if(c.flag&&text&&text!=="—")td.className+=" flag";return td;}
  function draw(){var list=rows.filter(keep);
    if(state.sort!==null){var i=state.sort,d=state.dir;list=list.slice().sort(function(a,b){return d*cmp(key(a[i]),key(b[i]));});}
    var pages=Math.max(1,Math.ceil(list.length/size));state.page=Math.min(Math.max(0,state.page),pages-1);
    var start=state.page*size,slice=list.slice(start,start+size);
    while(tbody.firstChild)tbody.removeChild(tbody.firstChild);
    slice.forEach(function(r){var tr=el("tr");cols.forEach(function(c,i){tr.appendChild(cell(c,r[i],r));});tbody.appendChild(tr);});
    hr.querySelectorAll("th").forEach(function(th,i){if(i===state.sort)th.setAttribute("aria-sort",state.dir>0?"ascending":"descending");else th.removeAttribute("aria-sort");});
    info.textContent=list.length?("rows "+(start+1)+"–"+(start+slice.length)+" of "+list.length+(list.length<rows.length?" (filtered from "+rows.length+")":"")):"no rows match";
    prev.disabled=state.page===0;next.disabled=state.page>=pages-1;}
  draw();
}
var picked=[];
function pick(name,on){var i=picked.indexOf(name);if(i>=0)picked.splice(i,1);if(on){picked.push(name);if(picked.length>2)picked.shift();}
  document.querySelectorAll("input[type=checkbox]").forEach(function(b){var n=(b.getAttribute("aria-label")||"").slice(8);b.checked=picked.indexOf(n)>=0;});
  var link=document.getElementById("compare-link");if(!link)return;
  if(picked.length===2){var q="compare.html?a=";link.href=q+encodeURIComponent(picked[0])+"&b="+encodeURIComponent(picked[1]);link.hidden=false;}else link.hidden=true;}
document.querySelectorAll("div.dt").forEach(build);
var live=document.getElementById("live");
if(live&&window.fetch){var src=live.getAttribute("data-src"),token=live.getAttribute("data-token");
  var poll=function(){fetch(src,{cache:"no-store"}).then(function(r){return r.ok?r.text():token;}).then(function(t){if(t.trim()!==token)location.reload();else setTimeout(poll,1500);},function(){setTimeout(poll,5000);});};
  setTimeout(poll,1500);}
})();
