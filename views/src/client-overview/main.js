import {App} from "@modelcontextprotocol/ext-apps"; new App({name:"x",version:"1"}).connect();
